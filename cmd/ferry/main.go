// Command ferry replays Aeron Archive recordings into Apache Pulsar.
//
//	ferry run        --config FILE                     replay the archive into Pulsar until SIGTERM/SIGINT/SIGHUP
//	ferry validate   --config FILE                     check a configuration, print its warnings
//	ferry status     --config FILE [--json] [--watch] what a running ferry serves on /status
//	ferry recordings --config FILE                     each stream's recordings, positions and commits
//	ferry checkpoint show  --config FILE --stream NAME  what ferry has committed for a stream
//	ferry checkpoint reset --config FILE --stream NAME --yes [--force]
//	                                                    delete a stream's checkpoint, verified
//	ferry checkpoint forget --config FILE --stream NAME --recording ID [--topic-holds POSITION] --yes
//	                                                    go on without what a purged or truncated recording left unpublished
//	ferry demo       [--aeron-dir DIR] [--pulsar URL] [--pulsar-admin URL] [--dir DIR] [--rate N] [--listen HOST:PORT]
//	                                                    record a sample publisher and run ferry on it, with live status
//	ferry version
//
// `ferry checkpoint reset` refuses to delete checkpoint data a newer ferry wrote unless
// --force is given. `checkpoint show` and `reset` also take a stream only the checkpoint
// store holds (renamed in the configuration, or removed from it); `ferry run` refuses to
// start a stream with no checkpoint whose channel, stream id and topic such a stream was
// stored under (renamed?). The demo's flags: --aeron-dir is the running ArchivingMediaDriver's
// directory (default: the Aeron client's, /dev/shm/aeron-<user>); --pulsar is the broker's
// service URL (default pulsar://127.0.0.1:6650); --pulsar-admin is its admin URL, asked
// whether the demo's topic is deduplicated (default http://127.0.0.1:8080; empty: not
// asked); --dir is where the demo writes its configuration and checkpoints
// (ferry-demo.yaml, ferry-demo-checkpoints.db; default: a new temporary directory, removed
// when the demo ends); --rate is how many messages a second the sample publisher offers
// (default 1000); --listen is the address of the demo's ferry's status endpoint (default
// 127.0.0.1:8089, http.listen's; the demo's configuration takes no FERRY_ variable).
// `ferry COMMAND -h` prints a command's flags.
//
// Exit status: 0 success, 1 failure (the message says what happened and what to do), 2 bad
// usage. `ferry status` (without --watch) prints the status and exits 1 when the ferry it
// asks is not healthy (as its /healthz: not connected to Aeron, a stream unhealthy), or has
// no status of a configured stream (it runs with another configuration).
package main

import "os"

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }
