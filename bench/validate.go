package bench

import (
	"strings"
	"time"

	"github.com/redmux/redmux/bench/load"
	"github.com/redmux/redmux/internal/lockrule"
	"github.com/redmux/redmux/internal/nodeaddr"
	"github.com/redmux/redmux/mux"
)

// checkSweepFlags refuses the flags a sweep sets itself or does not take.
func checkSweepFlags(c *Config, set map[string]bool) error {
	switch {
	case set["rate"]:
		return usagef("sweep sets the rate of each step itself; give the steps with -rates")
	case set["d"] || set["n"]:
		return usagef("sweep steps last -step each (-d and -n are for a single run)")
	case c.Step <= 0:
		return usagef("-step must be positive, got %v", c.Step)
	case c.Steps < 2 || c.Steps > 100:
		return usagef("-steps must be 2..100, got %d", c.Steps)
	case c.Refine < 0 || c.Refine > 10:
		return usagef("-refine must be 0..10, got %d", c.Refine)
	case c.JSON == "-" && c.CSV == "-":
		return usagef("-json - and -csv - both want stdout; send one to a file")
	case c.Hlog != "":
		return usagef("sweep writes its interval log to -out DIR (sweep.hlog); -hlog is for a single run")
	}
	return nil
}

// parseNodes checks -nodes and sets c.Nodes. The list is split as
// splitNodes splits it (a comma in a URL's password does not split); no
// error quotes a password (checkNode).
// An empty -nodes (an unset $NODES in -nodes "$NODES") is refused rather
// than read as "no -nodes", which would benchmark the embedded fake
// cluster and exit 0; so is a list in which two entries reach one server
// (nodeaddr.CheckDistinct): a lock's quorum would count it twice.
func parseNodes(c *Config, nodes string, set bool) error {
	if set && strings.TrimSpace(nodes) == "" {
		return usagef("-nodes is empty (an unset variable?): give host:port,... or leave -nodes out to run on the embedded fake cluster")
	}
	if nodes != "" {
		for _, a := range splitNodes(nodes) {
			a = strings.TrimSpace(a)
			if err := checkNode(a); err != nil {
				return err
			}
			c.Nodes = append(c.Nodes, a)
		}
		if err := nodeaddr.CheckDistinct(c.Nodes, nodeaddr.Defaults{}); err != nil {
			return usagef("-nodes: %v", err)
		}
	}
	return nil
}

// checkTLS checks the TLS flags against each other and the nodes.
func checkTLS(c *Config, set map[string]bool) error {
	tlsFlag := set["cacert"] || set["cert"] || set["key"] || set["sni"] || set["insecure"]
	switch {
	case tlsFlag && !c.TLS:
		return usagef("-cacert, -cert, -key, -sni and -insecure need -tls (a rediss:// node takes cacert=, cert=, key=, sni=, insecure= in its URL)")
	case c.TLS && len(c.Nodes) == 0 && c.RealLocal == 0:
		return usagef("-tls needs -nodes or -real-local: the embedded fake cluster speaks no TLS")
	case c.RealLocal > 0 && (set["cacert"] || set["cert"] || set["key"]):
		return usagef("-real-local -tls makes its own certificates; -cacert, -cert and -key are for -nodes")
	case (c.Cert == "") != (c.Key == ""):
		return usagef("-cert and -key go together")
	}
	if c.TLS && c.RealLocal == 0 {
		// the files are read now, not after "measuring:"
		if _, err := c.tlsConfig(); err != nil {
			return usagef("%v", err)
		}
	}
	for _, a := range c.Nodes {
		if c.TLS && strings.HasPrefix(a, "redis://") {
			return usagef("-tls with a redis:// (plaintext) node %s: write rediss://, or host:port", nodeaddr.RedactURL(a))
		}
	}
	return nil
}

// checkRanges checks the target flags against each other and every
// number against its range.
func checkRanges(c *Config, set map[string]bool) error {
	external := len(c.Nodes) > 0 || c.RealLocal > 0
	switch {
	case len(c.Nodes) > 0 && c.RealLocal > 0:
		return usagef("-nodes and -real-local are exclusive")
	case external && set["fake"]:
		return usagef("-fake is for the embedded cluster; it cannot be combined with -nodes or -real-local")
	case external && (len(c.Faults) > 0 || c.Latency != 0 || c.InProcess || c.NodeCap != 0):
		return usagef("-fault, -latency, -node-cap and -inprocess apply to the embedded cluster only")
	case c.NodeCap < 0 || c.NodeCap > 1e9:
		return usagef("-node-cap must be 0..1e9 commands/s, got %g", c.NodeCap)
	case c.Fake < 1 || c.Fake > 64:
		return usagef("-fake must be 1..64, got %d", c.Fake)
	case c.RealLocal < 0 || c.RealLocal > 64 || set["real-local"] && c.RealLocal == 0:
		return usagef("-real-local must be 1..64, got %d", c.RealLocal)
	case len(c.Nodes) > 64:
		return usagef("at most 64 nodes, got %d", len(c.Nodes))
	case c.Conns < 0 || c.Conns > mux.MaxConns:
		return usagef("-conns must be 0..%d, got %d", mux.MaxConns, c.Conns)
	case c.DirectWait < 0 || c.DirectWait > time.Second:
		return usagef("-direct-wait must be 0..1s, got %v", c.DirectWait)
	case c.Workers < 1 || c.Workers > 100000:
		return usagef("-c must be 1..100000, got %d", c.Workers)
	case set["d"] && set["n"]:
		return usagef("-d and -n are exclusive")
	case set["n"] && c.Ops <= 0:
		return usagef("-n must be positive, got %d", c.Ops)
	case !set["n"] && c.Duration <= 0:
		return usagef("-d must be positive, got %v", c.Duration)
	case c.Progress < 0:
		return usagef("-progress must not be negative")
	case c.Warmup < 0:
		return usagef("-warmup must not be negative")
	case c.Keys < 1 || c.Keys > 10_000_000:
		return usagef("-keys must be 1..10000000, got %d", c.Keys)
	case c.TTL < time.Millisecond:
		return usagef("-ttl must be at least 1ms, got %v", c.TTL)
	case lockrule.Drift(c.TTL, driftFactor, driftFixed) >= c.TTL:
		return usagef("-ttl %v leaves no validity after the clock drift allowance %v (ttl*%g + %v): give at least 3ms", c.TTL, lockrule.Drift(c.TTL, driftFactor, driftFixed), driftFactor, driftFixed)
	case c.User != "" && c.Password == "":
		return usagef("-user %s needs a password: $%s (or -password)", c.User, envPassword)
	case c.Timeout <= 0:
		return usagef("-timeout must be positive, got %v", c.Timeout)
	case c.Rate < 0:
		return usagef("-rate must not be negative")
	case c.Latency < 0:
		return usagef("-latency must not be negative")
	case c.DB < 0:
		return usagef("-db must not be negative")
	case c.CapacityRate < 0:
		return usagef("-capacity-rate must not be negative")
	case c.JSON == "-" && c.CSV == "-":
		return usagef("-json - and -csv - both want stdout; send one to a file")
	case !c.StartAt.IsZero() && set["n"]:
		return usagef("-start-at needs -d (every process's strategies then run in the same windows), not -n")
	case !c.StartAt.IsZero() && !c.StartAt.After(time.Now()):
		return usagef("-start-at %s has passed (now %s)", c.StartAt.UTC().Format(time.RFC3339), time.Now().UTC().Format(time.RFC3339))
	case !c.StartAt.IsZero() && c.StartAt.After(time.Now().Add(24*time.Hour)):
		return usagef("-start-at %s is more than 24h away", c.StartAt.UTC().Format(time.RFC3339))
	}
	return nil
}

// checkWorkload checks -workload and -fault, and applies the defaults they
// imply (-keys 1 when contended, no duration under -n).
func checkWorkload(c *Config, set map[string]bool) error {
	switch c.Workload {
	case load.WorkloadAcquireRelease, load.WorkloadAcquireExtendRelease, load.WorkloadFenced:
	case load.WorkloadContended:
		if !set["keys"] {
			c.Keys = 1
		}
	default:
		return usagef("unknown -workload %q (want acquire-release, acquire-extend-release, contended or fenced)", c.Workload)
	}
	if set["n"] {
		c.Duration = 0
	}
	for _, f := range c.Faults {
		if f.Node >= c.Fake {
			return usagef("-fault %s: node %d does not exist (the cluster has nodes 0..%d)", f, f.Node, c.Fake-1)
		}
	}
	return nil
}

// The deployment shapes of -real-local nodes (-shape).
const (
	shapeStandalone = "standalone"
	shapeCluster    = "cluster"
	shapeSentinel   = "sentinel"
)

// checkShape checks -shape and -shards.
func checkShape(c *Config, set map[string]bool) error {
	switch {
	case c.Shape != shapeStandalone && c.Shape != shapeCluster && c.Shape != shapeSentinel:
		return usagef("-shape %q: want standalone, cluster or sentinel", c.Shape)
	case set["shape"] && c.RealLocal == 0:
		return usagef("-shape is for -real-local (with -nodes, give redis-cluster:// or redis-sentinel:// URLs)")
	case c.Shape != shapeStandalone && c.TLS:
		return usagef("-shape %s: cluster and Sentinel nodes are plaintext (TLS to them is not supported yet)", c.Shape)
	case set["shards"] && c.Shape != shapeCluster:
		return usagef("-shards is for -shape cluster")
	case c.Shards < 1 || c.Shards > mux.MaxClusterShards:
		return usagef("-shards must be 1..%d, got %d", mux.MaxClusterShards, c.Shards)
	}
	return nil
}

// parseStrategies sets c.Strategies from -strategy. seq and fanout dial
// fixed addresses: with cluster or Sentinel nodes (-shape, or
// redis-cluster:// and redis-sentinel:// in -nodes) "all" is mux alone,
// and naming them is a usage error.
func parseStrategies(c *Config, strategy string) error {
	routed := ""
	if c.Shape != shapeStandalone {
		routed = "-shape " + c.Shape
	}
	for _, a := range c.Nodes {
		for _, scheme := range []string{nodeaddr.SentinelScheme, nodeaddr.ClusterScheme} {
			if routed == "" && strings.HasPrefix(strings.ToLower(a), scheme+"://") {
				routed = "a " + scheme + ":// node"
			}
		}
	}
	for _, s := range strings.Split(strategy, ",") {
		switch s = strings.TrimSpace(s); s {
		case "all":
			if c.Workload == load.WorkloadFenced || routed != "" {
				// mux is the only one with fencing tokens, and with
				// cluster and Sentinel nodes
				c.Strategies = append(c.Strategies, strategyMux)
				continue
			}
			c.Strategies = append(c.Strategies, allStrategies...)
		case strategySeq, strategyFanout:
			if c.Workload == load.WorkloadFenced {
				return usagef("-workload fenced runs -strategy mux only (seq and fanout have no fencing tokens)")
			}
			if routed != "" {
				return usagef("%s runs -strategy mux only (seq and fanout dial fixed addresses)", routed)
			}
			c.Strategies = append(c.Strategies, s)
		case strategyMux:
			c.Strategies = append(c.Strategies, s)
		default:
			return usagef("unknown -strategy %q (want seq, fanout, mux or all)", s)
		}
	}
	return nil
}
