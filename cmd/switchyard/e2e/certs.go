//go:build linux

package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// pki is what the API server needs: a CA, a serving certificate for
// 127.0.0.1 and the given addresses, a client certificate for its calls to
// kubelets (exec, logs, port-forward; in system:masters, as kubeadm's
// apiserver-kubelet-client), and a key pair for service-account tokens.
type pki struct {
	CAFile, CertFile, KeyFile           string
	KubeletClientCert, KubeletClientKey string
	SAKeyFile, SAPubFile                string
}

func writePEM(t testing.TB, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

func newPKI(t testing.TB, dir string, ips ...net.IP) pki {
	t.Helper()
	p := pki{
		CAFile: filepath.Join(dir, "ca.crt"), CertFile: filepath.Join(dir, "apiserver.crt"), KeyFile: filepath.Join(dir, "apiserver.key"),
		KubeletClientCert: filepath.Join(dir, "kubelet-client.crt"), KubeletClientKey: filepath.Join(dir, "kubelet-client.key"),
		SAKeyFile: filepath.Join(dir, "sa.key"), SAPubFile: filepath.Join(dir, "sa.pub"),
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "switchyard-e2e-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, p.CAFile, "CERTIFICATE", caDER)
	caCert, _ := x509.ParseCertificate(caDER)

	srv := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "kube-apiserver"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IPAddresses: append([]net.IP{net.ParseIP("127.0.0.1")}, ips...),
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	writeLeaf(t, srv, caCert, caKey, p.CertFile, p.KeyFile)
	client := &x509.Certificate{
		SerialNumber: big.NewInt(3), Subject: pkix.Name{CommonName: "kube-apiserver-kubelet-client", Organization: []string{"system:masters"}},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	writeLeaf(t, client, caCert, caKey, p.KubeletClientCert, p.KubeletClientKey)

	sa, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, p.SAKeyFile, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(sa))
	pub, err := x509.MarshalPKIXPublicKey(&sa.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, p.SAPubFile, "PUBLIC KEY", pub)
	return p
}

// writeLeaf signs a fresh key's certificate from template with the CA and
// writes both.
func writeLeaf(t testing.TB, template, ca *x509.Certificate, caKey *ecdsa.PrivateKey, certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificate(rand.Reader, template, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, certFile, "CERTIFICATE", der)
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, keyFile, "EC PRIVATE KEY", kb)
}
