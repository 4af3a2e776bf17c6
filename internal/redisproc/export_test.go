package redisproc

// Hooks for the external test package (which imports redistest, and so
// cannot be package redisproc itself without an import cycle).
var Ping = ping

func Dir(s *Server) string { return s.dir }
