package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/ferry-bridge/ferry/config"
)

// pulsar.tls.validate_hostname: false is honoured on the broker connection: the real
// pulsar-client-go completes the handshake with a broker whose certificate the configured CA
// signed for another host name, and does not with validate_hostname: true. (v0.19.0 checks
// the host name whatever its own option says.) A listener that only shakes hands stands in
// for the broker: what is tested is the handshake.
func TestValidateHostnameFalseIsHonouredOnTheBrokerConnection(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "broker.invalid"}, DNSNames: []string{"broker.invalid"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, validate := range []bool{false, true} {
		t.Run(fmt.Sprintf("validate_hostname %t", validate), func(t *testing.T) {
			ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}})
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			handshakes := make(chan error, 64)
			go func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					select {
					case handshakes <- c.(*tls.Conn).Handshake():
					default: // the client's retries
					}
					c.Close()
				}
			}()
			cfg, err := config.Parse([]byte(fmt.Sprintf("mode: archive\npulsar:\n  service_url: pulsar+ssl://%s\n  tls:\n    ca_file: %s\n    validate_hostname: %t\n"+
				"streams:\n  - name: orders\n    channel: aeron:ipc\n    stream_id: 1001\n    topic: orders\n", ln.Addr(), ca, validate)), nil)
			if err != nil {
				t.Fatal(err)
			}
			opts, err := clientOptions(cfg, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			opts.OperationTimeout, opts.ConnectionTimeout = 2*time.Second, 2*time.Second
			client, err := pulsar.NewClient(opts)
			if err != nil {
				t.Fatal(err)
			}
			defer client.Close()
			go func() { _, _ = client.CreateProducer(pulsar.ProducerOptions{Topic: "orders"}) }() // fails after the handshake: no Pulsar there
			select {
			case err := <-handshakes:
				if validate == (err == nil) {
					t.Fatalf("the broker's side of the handshake: %v; want it to fail only with validate_hostname true (the certificate is for broker.invalid)", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("no handshake")
			}
		})
	}
}

// selfSigned returns a CA certificate for name (its own issuer, good for server and client
// authentication), its key, and its PEM.
func selfSigned(t *testing.T, name string) (*x509.Certificate, *ecdsa.PrivateKey, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// With validate_hostname false ferry verifies the broker's chain itself; it reads the CA
// file and the client certificate again at every handshake, as pulsar-client-go does its
// own, so that a renewed CA bundle or client certificate is taken without a restart.
func TestTheTLSFilesAreReadAgainAtEveryHandshake(t *testing.T) {
	dir := t.TempDir()
	server, serverKey, serverPEM := selfSigned(t, "broker.invalid")
	_, _, otherPEM := selfSigned(t, "other.invalid")
	clientA, keyA, pemA := selfSigned(t, "client-a")
	_, keyB, pemB := selfSigned(t, "client-b")
	write := func(name string, b []byte) string {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	keyPEM := func(k *ecdsa.PrivateKey) []byte {
		der, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
	}
	ca, certFile, keyFile := write("ca.pem", otherPEM), write("client.pem", pemA), write("client-key.pem", keyPEM(keyA))
	tc, err := tlsConfig(config.TLS{CAFile: ca, CertFile: certFile, KeyFile: keyFile, ValidateHostname: false})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{server.Raw}, PrivateKey: serverKey}}, ClientAuth: tls.RequireAnyClientCert})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	clients := make(chan string, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if tc := c.(*tls.Conn); tc.Handshake() == nil {
				clients <- tc.ConnectionState().PeerCertificates[0].Subject.CommonName
			}
			c.Close()
		}
	}()
	dial := func() error {
		c, err := tls.Dial("tcp", ln.Addr().String(), tc)
		if err == nil {
			c.Close()
		}
		return err
	}
	if err := dial(); err == nil {
		t.Fatal("a broker certificate the CA file's CA did not sign was taken")
	}
	write("ca.pem", serverPEM) // the CA bundle renewed
	if err := dial(); err != nil {
		t.Fatalf("after the CA file was renewed: %v", err)
	}
	if got := <-clients; got != clientA.Subject.CommonName {
		t.Fatalf("the server saw client %q, want %q", got, clientA.Subject.CommonName)
	}
	write("client.pem", pemB) // the client certificate renewed
	write("client-key.pem", keyPEM(keyB))
	if err := dial(); err != nil {
		t.Fatalf("after the client certificate was renewed: %v", err)
	}
	if got := <-clients; got != "client-b" {
		t.Fatalf("the server saw client %q after the renewal, want client-b", got)
	}
}
