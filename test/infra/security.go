package infra

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// PulsarSecurity is what a broker needs to take TLS connections and authenticate clients
// by token (Pulsar's AuthenticationProviderToken with a secret key, HS256): a CA of its own,
// a server certificate for the loopback address signed by it, and the secret key tokens are
// signed with. All of it is made here, in Dir, for one test; nothing is fetched.
type PulsarSecurity struct {
	Dir string
	// CAFile is the PEM certificate clients trust the broker by.
	CAFile string
	// CertFile and KeyFile are the broker's certificate (for 127.0.0.1 and localhost) and
	// its key (PKCS #8: the broker takes no other form).
	CertFile, KeyFile string
	// SecretKeyFile holds the raw HMAC key tokens are signed with.
	SecretKeyFile string
	// AdminToken is a token of the broker's super-user role, which this package uses for its
	// own admin requests (readiness, health) and the broker for its internal client.
	AdminToken string

	secret []byte
}

// AdminRole is the super-user role of a secured test broker.
const AdminRole = "admin"

// NewPulsarSecurity makes the files of a secured broker in dir.
func NewPulsarSecurity(dir string) (*PulsarSecurity, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("infra: security dir: %w", err)
	}
	s := &PulsarSecurity{
		Dir:           dir,
		CAFile:        filepath.Join(dir, "ca.pem"),
		CertFile:      filepath.Join(dir, "broker.pem"),
		KeyFile:       filepath.Join(dir, "broker-key.pem"),
		SecretKeyFile: filepath.Join(dir, "secret.key"),
		secret:        make([]byte, 32),
	}
	if _, err := rand.Read(s.secret); err != nil {
		return nil, err
	}
	if err := os.WriteFile(s.SecretKeyFile, s.secret, 0o600); err != nil {
		return nil, fmt.Errorf("infra: secret key: %w", err)
	}
	if err := s.writeCertificates(); err != nil {
		return nil, fmt.Errorf("infra: certificates: %w", err)
	}
	var err error
	if s.AdminToken, err = s.Token(AdminRole, time.Time{}); err != nil {
		return nil, err
	}
	return s, nil
}

// Token is a token of role (its subject) that expires at expires (zero: never), signed with
// the broker's secret key.
func (s *PulsarSecurity) Token(role string, expires time.Time) (string, error) {
	claims := map[string]any{"sub": role}
	if !expires.IsZero() {
		claims["exp"] = expires.Unix()
	}
	header, err := json.Marshal(map[string]string{"alg": "HS256"})
	if err != nil {
		return "", err
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	enc := base64.RawURLEncoding
	signed := enc.EncodeToString(header) + "." + enc.EncodeToString(payload)
	mac := hmac.New(sha256.New, s.secret)
	mac.Write([]byte(signed))
	return signed + "." + enc.EncodeToString(mac.Sum(nil)), nil
}

// brokerConfig is the standalone.conf keys that secure a broker with s, its TLS ports given:
// TLS on ports of their own beside the plain ones (which the standalone's own client uses),
// token authentication on every port, authorization if authorize (without it, any
// authenticated role may publish, read and administer), and a check of every connection's
// token every refresh (zero: Pulsar's default), after which a client whose token expired
// must present a new one.
func (s *PulsarSecurity) brokerConfig(brokerTLSPort, webTLSPort int, refresh time.Duration, authorize bool) map[string]string {
	kv := map[string]string{
		"brokerServicePortTls":                 strconv.Itoa(brokerTLSPort),
		"webServicePortTls":                    strconv.Itoa(webTLSPort),
		"tlsCertificateFilePath":               s.CertFile,
		"tlsKeyFilePath":                       s.KeyFile,
		"tlsTrustCertsFilePath":                s.CAFile,
		"authenticationEnabled":                "true",
		"authenticationProviders":              "org.apache.pulsar.broker.authentication.AuthenticationProviderToken",
		"tokenSecretKey":                       "file://" + s.SecretKeyFile,
		"superUserRoles":                       AdminRole,
		"brokerClientAuthenticationPlugin":     "org.apache.pulsar.client.impl.auth.AuthenticationToken",
		"brokerClientAuthenticationParameters": "token:" + s.AdminToken,
	}
	if authorize {
		kv["authorizationEnabled"] = "true"
	}
	if refresh > 0 {
		kv["authenticationRefreshCheckSeconds"] = strconv.Itoa(int(max(refresh/time.Second, 1)))
	}
	return kv
}

func (s *PulsarSecurity) writeCertificates() error {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := time.Now()
	ca := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "ferry test CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	brokerKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	broker := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: Loopback},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.ParseIP(Loopback)},
		DNSNames:     []string{"localhost"},
	}
	brokerDER, err := x509.CreateCertificate(rand.Reader, broker, ca, &brokerKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(brokerKey)
	if err != nil {
		return err
	}
	for _, f := range []struct {
		path, typ string
		der       []byte
	}{{s.CAFile, "CERTIFICATE", caDER}, {s.CertFile, "CERTIFICATE", brokerDER}, {s.KeyFile, "PRIVATE KEY", keyDER}} {
		if err := os.WriteFile(f.path, pem.EncodeToMemory(&pem.Block{Type: f.typ, Bytes: f.der}), 0o600); err != nil {
			return err
		}
	}
	return nil
}
