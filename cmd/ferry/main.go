// Command ferry replays Aeron Archive recordings into Apache Pulsar.
//
//	ferry run        --config FILE                     replay the archive into Pulsar until SIGTERM
//	ferry validate   --config FILE                     check a configuration, print its warnings
//	ferry status     --config FILE [--json] [--watch] what a running ferry serves on /status
//	ferry recordings --config FILE                     each stream's recordings, positions and commits
//	ferry checkpoint show  --config FILE --stream NAME  what ferry has committed for a stream
//	ferry checkpoint reset --config FILE --stream NAME --yes
//	                                                    delete a stream's checkpoint, verified
//	ferry demo       [--aeron-dir DIR] [--pulsar URL]  record a sample publisher and run ferry on it, with live status
//	ferry version
//
// Exit status: 0 success, 1 failure (the
// message says what happened and what to do), 2 bad usage.
package main

import "os"

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }
