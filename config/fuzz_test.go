package config

import (
	"os"
	"testing"
)

// FuzzParse checks that Parse never panics, and that it returns either a
// Config or an error, never both or neither.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"testdata/example.yaml", "testdata/transport.yaml"} {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(doc("archive", "checkpoint:\n  every_ms: -2\n", "    start_position: 33\n    reset: true\n")))
	f.Add([]byte("a: &a [*a, *a]\nmode: *a\n"))
	f.Add([]byte("streams:\n  - &s {name: a}\n  - *s\n"))
	env := envOf(map[string]string{"FERRY_INFLIGHT_MAX_BYTES": "1k", "FERRY_TRANSPORT_SPY": "true"})
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, e := range []func(string) (string, bool){nil, env} {
			c, err := Parse(data, e)
			if (c == nil) == (err == nil) {
				t.Fatalf("Parse returned %v and %v", c, err)
			}
			if c != nil {
				_ = c.Warnings()
			}
		}
	})
}
