//go:build race

package pipeline

// raceEnabled says the test binary was built with -race; the ferry binary is built the same.
const raceEnabled = true
