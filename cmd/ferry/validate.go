package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/ferry-bridge/ferry/config"
)

// validate loads a configuration as `ferry run` would and reports every problem in it,
// or its mode, streams and warnings.
func validate(args []string, stdout io.Writer) error {
	var path string
	if err := flags("validate", args, func(fs *flag.FlagSet) { fs.StringVar(&path, "config", "", "configuration file") }); err != nil {
		return err
	}
	cfg, err := loadConfig(path)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: valid, mode %s, %d stream(s)\n", path, cfg.Mode, len(cfg.Streams))
	for _, s := range cfg.Streams {
		fmt.Fprintf(stdout, "  %s: %s stream %d -> %s\n", s.Name, s.Channel, s.StreamID, s.Topic)
	}
	for _, w := range configWarnings(cfg) {
		fmt.Fprintf(stdout, "warning: %s\n", w)
	}
	return nil
}

func loadConfig(path string) (*config.Config, error) {
	if path == "" {
		return nil, usageError{"--config is required"}
	}
	return config.Load(path, lookupEnv)
}

// configWarnings are what ferry says of cfg at every start, and of the environment's
// FERRY_ variables that override nothing.
func configWarnings(cfg *config.Config) []string {
	return append(cfg.Warnings(), config.UnknownEnv(environ())...)
}
