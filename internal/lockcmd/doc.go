// Package lockcmd builds the Redis commands of the Redlock hot path,
// append-style and without allocating: SET key value NX PX ms to acquire,
// EVALSHA sha 1 key value [ms] to release and extend, and their EVAL
// fallbacks for a server that answers NOSCRIPT.
//
// They live here, not in package resp, because they are the lock's command
// shapes, not the protocol's: resp stays a generic codec. Both users of
// these shapes reach this package: redlock (the algorithm) and bench (its
// seq and fanout strategies, which must send byte-for-byte what redlock
// sends so that the comparison is the I/O pattern's alone). Each builder
// writes exactly what resp.AppendCommand writes for the same arguments
// (tests check it); the builders only skip the argument slice and the
// number-to-string conversion.
package lockcmd
