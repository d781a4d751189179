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
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/ferry-bridge/ferry/config"
)

// pulsar.tls.validate_hostname: false is honoured on the broker connection, and checks the
// chain still: the real pulsar-client-go completes the handshake with a broker whose
// certificate the configured CA signed for another host name, and does not when another CA
// signed it; with validate_hostname true it does not for another name, and does for the
// broker's own (its IP address). (v0.19.0 checks the host name whatever its own option
// says.) A listener that only shakes hands stands in for the broker: what is tested is the
// handshake.
func TestValidateHostnameFalseIsHonouredOnTheBrokerConnection(t *testing.T) {
	_, _, otherPEM := selfSigned(t, "other.invalid")
	for _, c := range []struct {
		name          string
		validate, ip  bool // validate_hostname; the certificate names 127.0.0.1 too
		anotherCA, ok bool // ca_file holds another CA; the handshake completes
	}{
		{name: "false, the CA's certificate for another name", validate: false, ok: true},
		{name: "false, another CA's certificate", validate: false, anotherCA: true, ok: false},
		{name: "true, the CA's certificate for another name", validate: true, ok: false},
		{name: "true, the CA's certificate for the broker's address", validate: true, ip: true, ok: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			cert, key, certPEM := selfSigned(t, "broker.invalid", c.ip)
			caPEM := certPEM
			if c.anotherCA {
				caPEM = otherPEM
			}
			ca := filepath.Join(t.TempDir(), "ca.pem")
			if err := os.WriteFile(ca, caPEM, 0o600); err != nil {
				t.Fatal(err)
			}
			ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{cert.Raw}, PrivateKey: key}}})
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			handshakes := make(chan error, 64)
			go func() {
				for {
					conn, err := ln.Accept()
					if err != nil {
						return
					}
					_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
					select {
					case handshakes <- conn.(*tls.Conn).Handshake():
					default: // the client's retries
					}
					conn.Close()
				}
			}()
			cfg, err := config.Parse([]byte(fmt.Sprintf("mode: archive\npulsar:\n  service_url: pulsar+ssl://%s\n  tls:\n    ca_file: %s\n    validate_hostname: %t\n"+
				"streams:\n  - name: orders\n    channel: aeron:ipc\n    stream_id: 1001\n    topic: orders\n", ln.Addr(), ca, c.validate)), nil)
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
				if c.ok != (err == nil) {
					t.Fatalf("the broker's side of the handshake: %v; want it to complete: %t", err, c.ok)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("no handshake")
			}
		})
	}
}

// selfSigned returns a CA certificate for name (its own issuer, good for server and client
// authentication; with ip, for 127.0.0.1 too), its key, and its PEM.
func selfSigned(t *testing.T, name string, ip ...bool) (*x509.Certificate, *ecdsa.PrivateKey, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	if len(ip) > 0 && ip[0] {
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
	}
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

// clientCertFiles writes a client certificate and its key into files of a temporary
// directory and returns their paths.
func clientCertFiles(t *testing.T) (certFile, keyFile string) {
	t.Helper()
	_, key, certPEM := selfSigned(t, "client")
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "client.pem"), filepath.Join(dir, "client-key.pem")
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// Over TLS the files of pulsar.tls are read at start, whatever validate_hostname says: a
// missing one stops the start, naming its key, rather than every producer failing later
// (pulsar-client-go reads them at each connection).
func TestTheTLSFilesAreReadAtStart(t *testing.T) {
	certFile, keyFile := clientCertFiles(t)
	missing := filepath.Join(t.TempDir(), "missing.pem")
	for _, c := range []struct{ name, tls, auth, want string }{
		{"ca_file", "    ca_file: " + missing + "\n", "", "pulsar.tls.ca_file"},
		{"ca_file, validate_hostname false", "    ca_file: " + missing + "\n    validate_hostname: false\n", "", "pulsar.tls.ca_file"},
		{"cert_file beside a token", "    cert_file: " + missing + "\n    key_file: " + keyFile + "\n", "  auth:\n    token: abc\n", "pulsar.tls.cert_file"},
		{"key_file beside a token", "    cert_file: " + certFile + "\n    key_file: " + missing + "\n", "  auth:\n    token: abc\n", "pulsar.tls.cert_file and key_file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := config.Parse([]byte("mode: archive\npulsar:\n  service_url: pulsar+ssl://127.0.0.1:6651\n  tls:\n"+c.tls+c.auth+
				"streams:\n  - name: orders\n    channel: aeron:ipc\n    stream_id: 1001\n    topic: orders\n"), nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := clientOptions(cfg, io.Discard); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("clientOptions = %v; want the start stopped, naming %s", err, c.want)
			}
		})
	}
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
			_ = c.SetDeadline(time.Now().Add(5 * time.Second))
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
	if got := nextClient(t, clients); got != clientA.Subject.CommonName {
		t.Fatalf("the server saw client %q, want %q", got, clientA.Subject.CommonName)
	}
	write("client.pem", pemB) // the client certificate renewed
	write("client-key.pem", keyPEM(keyB))
	if err := dial(); err != nil {
		t.Fatalf("after the client certificate was renewed: %v", err)
	}
	if got := nextClient(t, clients); got != "client-b" {
		t.Fatalf("the server saw client %q after the renewal, want client-b", got)
	}
}

// nextClient is the next client the stand-in server completed a handshake with.
func nextClient(t *testing.T, clients <-chan string) string {
	t.Helper()
	select {
	case c := <-clients:
		return c
	case <-time.After(10 * time.Second):
		t.Fatal("the server completed no handshake")
		return ""
	}
}
