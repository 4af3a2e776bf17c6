package redisproc

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// CertOptions shape the certificates WriteCerts makes.
type CertOptions struct {
	// ServerExpired makes the server certificate one that expired an hour
	// ago (the CA and the client certificate stay valid).
	ServerExpired bool
}

// WriteCerts makes a throw-away CA and, signed by it, a server certificate
// for 127.0.0.1, ::1 and localhost and a client certificate (ECDSA P-256,
// valid for a day), writes them as PEM files into dir (ca.crt, server.crt,
// server.key, client.crt, client.key; keys mode 0600) and returns them as
// a TLS set-up whose readiness-probe client certificate is the client one.
// Nothing is ever committed: benchmarks and tests make theirs per run.
func WriteCerts(dir string, opt CertOptions) (*TLS, error) {
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "redmux test CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	issue := func(cn string, usage x509.ExtKeyUsage, notAfter time.Time, server bool) ([]byte, []byte, error) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, nil, err
		}
		tmpl := &x509.Certificate{
			SerialNumber: serial(),
			Subject:      pkix.Name{CommonName: cn},
			NotBefore:    now.Add(-2 * time.Hour),
			NotAfter:     notAfter,
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		}
		if server {
			tmpl.DNSNames = []string{"localhost"}
			tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return nil, nil, err
		}
		kder, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			return nil, nil, err
		}
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
			pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), nil
	}
	serverNotAfter := now.Add(24 * time.Hour)
	if opt.ServerExpired {
		serverNotAfter = now.Add(-time.Hour)
	}
	sCert, sKey, err := issue("redmux test server", x509.ExtKeyUsageServerAuth, serverNotAfter, true)
	if err != nil {
		return nil, err
	}
	cCert, cKey, err := issue("redmux test client", x509.ExtKeyUsageClientAuth, now.Add(24*time.Hour), false)
	if err != nil {
		return nil, err
	}
	t := &TLS{
		CAFile:         filepath.Join(dir, "ca.crt"),
		CertFile:       filepath.Join(dir, "server.crt"),
		KeyFile:        filepath.Join(dir, "server.key"),
		ClientCertFile: filepath.Join(dir, "client.crt"),
		ClientKeyFile:  filepath.Join(dir, "client.key"),
	}
	files := []struct {
		path string
		data []byte
		mode os.FileMode
	}{
		{t.CAFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o644},
		{t.CertFile, sCert, 0o644},
		{t.KeyFile, sKey, 0o600},
		{t.ClientCertFile, cCert, 0o644},
		{t.ClientKeyFile, cKey, 0o600},
	}
	for _, f := range files {
		if err := os.WriteFile(f.path, f.data, f.mode); err != nil {
			return nil, err
		}
	}
	return t, nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return big.NewInt(time.Now().UnixNano())
	}
	return n
}
