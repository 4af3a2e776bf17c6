package redlock

// WithoutQuarantine turns rules 2 and 4 of docs/OPERATIONS.md off for
// grants (a node counts whatever its incarnation and its data-set
// marker): for the tests' controls, which show what the quarantine
// prevents. Not part of the API.
func WithoutQuarantine() Option {
	return clientOption(func(c *clientConfig) { c.unprotected = true })
}
