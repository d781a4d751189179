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
