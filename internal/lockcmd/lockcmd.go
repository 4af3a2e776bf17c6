package lockcmd

import (
	"strconv"

	"github.com/redmux/redmux/resp"
)

// The Append* functions append one command, as a RESP array of bulk
// strings, to dst and return the extended slice. They never allocate when
// dst has room for the command.

// AppendSetNXPX appends the lock acquisition command
// "SET key value NX PX ttlMillis".
func AppendSetNXPX(dst []byte, key string, value []byte, ttlMillis int64) []byte {
	dst = append(dst, "*6\r\n$3\r\nSET\r\n"...)
	dst = resp.AppendBulkString(dst, key)
	dst = resp.AppendBulk(dst, value)
	dst = append(dst, "$2\r\nNX\r\n$2\r\nPX\r\n"...)
	return resp.AppendBulkInt(dst, ttlMillis)
}

// AppendEvalSHA appends "EVALSHA sha 1 key value", the shape of the lock
// release call.
func AppendEvalSHA(dst []byte, sha, key string, value []byte) []byte {
	dst = append(dst, "*5\r\n$7\r\nEVALSHA\r\n"...)
	return appendScriptTail(dst, sha, key, value)
}

// AppendEvalSHAInt appends "EVALSHA sha 1 key value n", the shape of the lock
// extension call (n is the new TTL in milliseconds).
func AppendEvalSHAInt(dst []byte, sha, key string, value []byte, n int64) []byte {
	dst = append(dst, "*6\r\n$7\r\nEVALSHA\r\n"...)
	dst = appendScriptTail(dst, sha, key, value)
	return resp.AppendBulkInt(dst, n)
}

// AppendEval appends "EVAL script 1 key value", the fallback for
// AppendEvalSHA when the server answers NOSCRIPT.
func AppendEval(dst []byte, script, key string, value []byte) []byte {
	dst = append(dst, "*5\r\n$4\r\nEVAL\r\n"...)
	return appendScriptTail(dst, script, key, value)
}

// AppendEvalInt appends "EVAL script 1 key value n", the fallback for
// AppendEvalSHAInt.
func AppendEvalInt(dst []byte, script, key string, value []byte, n int64) []byte {
	dst = append(dst, "*6\r\n$4\r\nEVAL\r\n"...)
	dst = appendScriptTail(dst, script, key, value)
	return resp.AppendBulkInt(dst, n)
}

func appendScriptTail(dst []byte, body, key string, value []byte) []byte {
	dst = resp.AppendBulkString(dst, body)
	dst = append(dst, "$1\r\n1\r\n"...)
	dst = resp.AppendBulkString(dst, key)
	return resp.AppendBulk(dst, value)
}

// AppendEvalSHAKeys appends "EVALSHA sha len(keys) keys... value", the
// shape of the multi-resource release.
func AppendEvalSHAKeys(dst []byte, sha string, keys []string, value []byte) []byte {
	dst = resp.AppendArrayHeader(dst, 4+len(keys))
	dst = append(dst, "$7\r\nEVALSHA\r\n"...)
	return appendKeys(dst, sha, keys, value)
}

// AppendEvalSHAKeysInt appends "EVALSHA sha len(keys) keys... value n",
// the shape of the multi-resource acquisition and extension (n is the TTL
// in milliseconds).
func AppendEvalSHAKeysInt(dst []byte, sha string, keys []string, value []byte, n int64) []byte {
	dst = resp.AppendArrayHeader(dst, 5+len(keys))
	dst = append(dst, "$7\r\nEVALSHA\r\n"...)
	dst = appendKeys(dst, sha, keys, value)
	return resp.AppendBulkInt(dst, n)
}

func appendKeys(dst []byte, sha string, keys []string, value []byte) []byte {
	dst = resp.AppendBulkString(dst, sha)
	dst = resp.AppendBulkInt(dst, int64(len(keys)))
	for _, k := range keys {
		dst = resp.AppendBulkString(dst, k)
	}
	return resp.AppendBulk(dst, value)
}

// FenceSuffix names a resource's fencing counter: the key resource +
// FenceSuffix on every node.
const FenceSuffix = ":fence"

// AppendEvalSHAFence appends "EVALSHA sha 2k keys... counters... value
// n tag", the shape of the fencing token's write-back (n: the token; tag:
// the node's run_id, "" when unknown): the lock keys are keys, or key
// alone when keys is nil, and each one's counter is the key +
// FenceSuffix, written without building a string.
func AppendEvalSHAFence(dst []byte, sha, key string, keys []string, value []byte, n int64, tag string) []byte {
	dst = appendFenceHead(dst, sha, key, keys, value, 2)
	dst = resp.AppendBulkInt(dst, n)
	return resp.AppendBulkString(dst, tag)
}

// AppendEvalSHAFenceGuess appends "EVALSHA sha 2k keys... counters...
// value ttlMillis guess tag", the shape of the fenced acquisition (keys
// and tag as for AppendEvalSHAFence).
func AppendEvalSHAFenceGuess(dst []byte, sha, key string, keys []string, value []byte, ttlMillis, guess int64, tag string) []byte {
	return resp.AppendBulkString(AppendEvalSHAFenceGuessHead(dst, sha, key, keys, value, ttlMillis, guess), tag)
}

// AppendEvalSHAFenceGuessHead is AppendEvalSHAFenceGuess without its last
// argument, the tag (resp.AppendBulkString appends it): the part an
// acquisition's commands to every node share, encoded once.
func AppendEvalSHAFenceGuessHead(dst []byte, sha, key string, keys []string, value []byte, ttlMillis, guess int64) []byte {
	dst = appendFenceHead(dst, sha, key, keys, value, 3)
	dst = resp.AppendBulkInt(dst, ttlMillis)
	return resp.AppendBulkInt(dst, guess)
}

// appendFenceHead appends the array header (for args more arguments after
// the value), EVALSHA, sha, the key count, the keys, their counters and
// the value.
func appendFenceHead(dst []byte, sha, key string, keys []string, value []byte, args int) []byte {
	k := len(keys)
	if keys == nil {
		k = 1
	}
	dst = resp.AppendArrayHeader(dst, 4+2*k+args)
	dst = append(dst, "$7\r\nEVALSHA\r\n"...)
	dst = resp.AppendBulkString(dst, sha)
	dst = resp.AppendBulkInt(dst, int64(2*k))
	if keys == nil {
		dst = resp.AppendBulkString(dst, key)
		dst = appendCounter(dst, key)
	} else {
		for _, x := range keys {
			dst = resp.AppendBulkString(dst, x)
		}
		for _, x := range keys {
			dst = appendCounter(dst, x)
		}
	}
	return resp.AppendBulk(dst, value)
}

// appendCounter appends the bulk string key + FenceSuffix.
func appendCounter(dst []byte, key string) []byte {
	dst = append(dst, '$')
	dst = strconv.AppendInt(dst, int64(len(key)+len(FenceSuffix)), 10)
	dst = append(dst, "\r\n"...)
	dst = append(dst, key...)
	return append(dst, FenceSuffix+"\r\n"...)
}

// The fenced acquisition of a single lock on a node that is not a Redis
// Cluster's is three native commands, pipelined in this order on one
// connection (docs/FENCING.md, "Raise first"): AppendZAddGT, the SET NX PX
// (AppendSetNXPX), AppendZRevRangeTop.

// AppendZRevRangeTop appends "ZREVRANGE key:fence 0 1 WITHSCORES": the
// counter's top two members and their scores.
func AppendZRevRangeTop(dst []byte, key string) []byte {
	dst = append(dst, "*5\r\n$9\r\nZREVRANGE\r\n"...)
	dst = appendCounter(dst, key)
	return append(dst, "$1\r\n0\r\n$1\r\n1\r\n$10\r\nWITHSCORES\r\n"...)
}

// AppendZAddGT appends "ZADD key:fence [XX] GT CH guess tag": the counter
// raised to guess under the member tag, never lowered, and with xx only
// where tag's member exists. CH makes the answer 1 where it raised.
func AppendZAddGT(dst []byte, key string, xx bool, guess int64, tag string) []byte {
	if xx {
		dst = append(dst, "*7\r\n$4\r\nZADD\r\n"...)
	} else {
		dst = append(dst, "*6\r\n$4\r\nZADD\r\n"...)
	}
	dst = appendCounter(dst, key)
	if xx {
		dst = append(dst, "$2\r\nXX\r\n"...)
	}
	dst = append(dst, "$2\r\nGT\r\n$2\r\nCH\r\n"...)
	dst = resp.AppendBulkInt(dst, guess)
	return resp.AppendBulkString(dst, tag)
}

// AppendEvalSHACounters appends "EVALSHA sha k counters...": the shape of
// the fencing counters' conversion (FenceMigrate), key alone when keys is
// nil.
func AppendEvalSHACounters(dst []byte, sha, key string, keys []string) []byte {
	k := len(keys)
	if keys == nil {
		k = 1
	}
	dst = resp.AppendArrayHeader(dst, 3+k)
	dst = append(dst, "$7\r\nEVALSHA\r\n"...)
	dst = resp.AppendBulkString(dst, sha)
	dst = resp.AppendBulkInt(dst, int64(k))
	if keys == nil {
		return appendCounter(dst, key)
	}
	for _, x := range keys {
		dst = appendCounter(dst, x)
	}
	return dst
}
