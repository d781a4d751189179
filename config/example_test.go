package config_test

import (
	"fmt"
	"os"

	"github.com/ferry-bridge/ferry/config"
)

// Example loads the documented example file, with the token taken from the
// environment.
func Example() {
	data, err := os.ReadFile("testdata/example.yaml")
	if err != nil {
		fmt.Println(err)
		return
	}
	env := map[string]string{"FERRY_PULSAR_AUTH_TOKEN": "s3cr3t"}
	// token_file is in the file, so the token from the environment conflicts.
	_, err = config.Parse(data, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	fmt.Println(err)

	c, err := config.Parse(data, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c.Mode, c.Streams[0].Topic, c.Streams[1].Topic, c.Streams[1].Start)
	// Output:
	// config: pulsar.auth.token_file = "/etc/ferry/token" (line 36): is set together with pulsar.auth.token (from FERRY_PULSAR_AUTH_TOKEN); fix: unset FERRY_PULSAR_AUTH_TOKEN, or remove pulsar.auth.token_file
	// archive persistent://public/default/orders persistent://public/default/fills {position 7 4096}
}
