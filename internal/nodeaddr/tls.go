package nodeaddr

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/url"
	"os"
	"strconv"
)

// This file holds a rediss:// node's TLS options (nodeaddr.go parses the rest
// of a node's URL).

// urlTLSOptions are the query options that only rediss:// takes.
var urlTLSOptions = []string{"skip_verify", "insecure", "cacert", "cert", "key", "sni", "min_version"}

// tlsOptions makes a rediss:// node's TLS configuration: base (Config.TLS,
// or defaults) for host, with the URL's TLS options applied.
func (e addrErr) tlsOptions(q url.Values, base *tls.Config, host string) (*tls.Config, error) {
	if base == nil {
		base = &tls.Config{}
	}
	tc := nodeTLS(base, host)
	for _, k := range []string{"skip_verify", "insecure"} {
		if v := q.Get(k); q.Has(k) {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return nil, e.bad("%s=%q: want true or false", k, v)
			}
			tc.InsecureSkipVerify = b
		}
	}
	if v := q.Get("sni"); v != "" {
		tc.ServerName = v
	}
	if v := q.Get("cacert"); v != "" {
		pool, err := LoadCertPool(v)
		if err != nil {
			return nil, e.bad("cacert: %v", err)
		}
		tc.RootCAs = pool
	}
	cert, key := q.Get("cert"), q.Get("key")
	if (cert == "") != (key == "") {
		return nil, e.bad("cert and key go together")
	}
	if cert != "" {
		kp, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, e.bad("cert/key: %v", err)
		}
		tc.Certificates = []tls.Certificate{kp}
	}
	switch v := q.Get("min_version"); v {
	case "":
	case "1.2":
		tc.MinVersion = tls.VersionTLS12
	case "1.3":
		tc.MinVersion = tls.VersionTLS13
	default:
		return nil, e.bad("min_version=%q: want 1.2 or 1.3", v)
	}
	return tc, nil
}

// nodeTLS clones base for one node: ServerName defaults to the node's host
// (certificates are checked against it), MinVersion to TLS 1.2.
func nodeTLS(base *tls.Config, host string) *tls.Config {
	tc := base.Clone()
	if tc.ServerName == "" {
		tc.ServerName = host
	}
	if tc.MinVersion == 0 {
		tc.MinVersion = tls.VersionTLS12
	}
	return tc
}

// LoadCertPool reads PEM certificates (a CA bundle) from file into a new
// pool, for tls.Config.RootCAs. It fails if the file holds no certificate.
func LoadCertPool(file string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s: no PEM certificate in it", file)
	}
	return pool, nil
}
