package infra

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A secured broker takes TLS on its own ports, with a certificate its CA vouches for, and
// answers only requests that carry a valid token, on every port: none, a forged or an
// expired one is refused.
func TestSecuredPulsarAuthenticatesEveryRequest(t *testing.T) {
	dir := t.TempDir()
	sec, err := NewPulsarSecurity(filepath.Join(dir, "security"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := StartPulsar(context.Background(), PulsarOptions{Dir: filepath.Join(dir, "pulsar"), Security: sec})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	if !strings.HasPrefix(p.ServiceURLTLS, "pulsar+ssl://"+Loopback+":") || !strings.HasPrefix(p.AdminURLTLS, "https://"+Loopback+":") {
		t.Fatalf("TLS URLs %q, %q", p.ServiceURLTLS, p.AdminURLTLS)
	}
	ca, err := os.ReadFile(sec.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		t.Fatal("the CA file holds no certificate")
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	status := func(url, token string) int {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, url+"/admin/v2/clusters", nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	user, err := sec.Token("ferry", time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	expired, err := sec.Token("ferry", time.Now().Add(-time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	other, err := NewPulsarSecurity(filepath.Join(dir, "other"))
	if err != nil {
		t.Fatal(err)
	}
	forged, err := other.Token("ferry", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, url, token string
		want             int
	}{
		{"TLS, a role's token", p.AdminURLTLS, user, http.StatusOK},
		{"TLS, the admin token", p.AdminURLTLS, sec.AdminToken, http.StatusOK},
		{"plain, a role's token", p.AdminURL, user, http.StatusOK},
		{"TLS, no token", p.AdminURLTLS, "", http.StatusUnauthorized},
		{"plain, no token", p.AdminURL, "", http.StatusUnauthorized},
		{"TLS, an expired token", p.AdminURLTLS, expired, http.StatusUnauthorized},
		{"TLS, a token of another key", p.AdminURLTLS, forged, http.StatusUnauthorized},
	} {
		if got := status(c.url, c.token); got != c.want {
			t.Errorf("%s: status %d, want %d", c.name, got, c.want)
		}
	}
}
