package bench

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Item 5: INFO CPU parsing and the per-node figures.
func TestServerCPUFromInfo(t *testing.T) {
	info := "# CPU\r\nused_cpu_sys:1.500000\r\nused_cpu_user:2.250000\r\nused_cpu_sys_children:0.000000\r\n"
	require.InDelta(t, 3.75, parseInfoCPU(info), 1e-9)
	require.Equal(t, -1.0, parseInfoCPU("# CPU\r\nused_cpu_sys:1\r\n"))
	require.Equal(t, -1.0, parseInfoCPU(""))
	before := serverSnap{nodeCPU: []float64{1, 1, 1}}
	after := serverSnap{nodeCPU: []float64{1.1, 1.2, 1.3}}
	c := serverCost(before, after, 1000, 3)
	require.Equal(t, "info", c.CPUSource)
	require.InDelta(t, 200, c.CPUUsPerOpPerNode, 1e-6) // (0.1+0.2+0.3)/3 s over 1000 ops
	require.InDelta(t, 300, c.MaxNodeCPUUsPerOp, 1e-6)
	after.nodeCPU[1] = -1 // one node did not report: no INFO figure
	require.Nil(t, serverCost(before, after, 1000, 3))
}
