package pulsaradmin

import (
	"net/http"
	"strings"
	"testing"
)

// The admin API's paths are the topic name's parts, each escaped; anything but a full
// topic name is refused before a request is made.
func TestTopicPath(t *testing.T) {
	for _, tt := range []struct{ topic, want string }{
		{"persistent://public/default/orders", "persistent/public/default/orders"},
		{"persistent://public/default/orders-partition-2", "persistent/public/default/orders-partition-2"},
		{"non-persistent://t/ns/a b", "non-persistent/t/ns/a%20b"},
		{"persistent://t/ns/a?b", "persistent/t/ns/a%3Fb"},
		{"orders", ""},
		{"persistent://public/orders", ""},
		{"persistent://public//orders", ""},
		{"persistent://a/b/c/d", ""},
		{"kafka://a/b/c", ""},
	} {
		got, err := topicPath(tt.topic)
		if got != tt.want || (err == nil) != (tt.want != "") {
			t.Errorf("topicPath(%q) = %q, %v; want %q", tt.topic, got, err, tt.want)
		}
	}
}

// An error answer carries the broker's reason, and a refusal says what permission is
// missing.
func TestStatusErrorSaysWhy(t *testing.T) {
	e := &StatusError{Code: http.StatusNotFound, Path: "/admin/v2/persistent/a/b/c/stats", Reason: reason([]byte(`{"reason":"Topic persistent://a/b/c not found"}`))}
	if got := e.Error(); got != "admin API: GET /admin/v2/persistent/a/b/c/stats: 404 Not Found: Topic persistent://a/b/c not found" {
		t.Errorf("404: %q", got)
	}
	e = &StatusError{Code: http.StatusForbidden, Path: "/p", Reason: reason([]byte("<html>" + strings.Repeat("x", 300)))}
	if got := e.Error(); !strings.Contains(got, "403 Forbidden: <html>xxx") || !strings.HasSuffix(got, "permission to produce to or consume the topic)") || len(got) > 400 {
		t.Errorf("403: %q", got)
	}
}
