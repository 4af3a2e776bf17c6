package mux

// sentinelTopo is a Sentinel-managed node's topology (topology.go): one
// group, dialled at the primary the sentinels name (dialViaSentinels),
// followed by a +switch-master watcher, and replaced when the process
// answers READONLY or LOADING.
type sentinelTopo struct{ plainTopo }

func (sentinelTopo) dial(c *Client, i, _ int, try dialFunc) error {
	return c.dialViaSentinels(i, try)
}

func (sentinelTopo) background(c *Client, i int) {
	if sentinelWatchOff.Load() {
		return
	}
	c.supWG.Add(1)
	go c.watchSentinel(i)
}

func (sentinelTopo) errReply(_ *Client, _ int, f []byte) error { return demotedReply(f, true) }
