package supervisor

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them: the actor systems,
// mailboxes and restart goroutines the tests start must all be gone.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
