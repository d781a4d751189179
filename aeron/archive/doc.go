// Package archive is ferry's Aeron Archive client: it asks a running archive for its
// recordings, their positions and replays of them, and starts and stops recordings, over
// the archive's control protocol (schema 101 version 10, client protocol 1.11.0; see
// ../shared/reference/aeron-protocol.md §10–11). It is built on package aeron and knows
// nothing of ferry.
//
// # Using it
//
//  1. [Connect] opens a control session: it adds the response subscription and the request
//     publication, sends the connect request once the publication is connected, and waits
//     for the archive's OK. Nothing is sent before it.
//  2. The request methods ([Client.ListRecordingsForURI], [Client.StartReplay] …) block
//     until the archive answers, the context ends, or the message timeout passes.
//  3. [Client.Signals] delivers recording signals (START, STOP, EXTEND …) as they arrive.
//  4. If the archive goes away (its response image is lost, or it stops answering), every
//     call returns an error wrapping [ErrArchiveUnavailable] and [Client.Dead] is closed.
//     Reconnecting is the caller's decision: [Connect] again.
//
// # Concurrency
//
// A Client is safe for concurrent use. One goroutine, the session's agent, owns the
// request publication and the response subscription: it sends every request and polls the
// response stream continuously, even when no request is waiting, because the archive
// drops a client that stops reading its responses (it pings every second and gives up when
// it cannot send for the connect timeout). Callers hand requests to the agent through a
// bounded queue and wait for their answer on a channel of their own.
package archive
