// Package channel parses, validates and builds Aeron channel URIs such as
// "aeron:udp?endpoint=localhost:40123|term-length=1m" and "aeron:ipc", as
// Aeron 1.47.3 accepts them (io.aeron.ChannelUri and the driver's
// PublicationParams, SubscriptionParams and UdpChannel).
//
// # What it owns
//
//   - The URI syntax: an optional "aeron-spy:" prefix, "aeron:", the media
//     ("ipc" or "udp"), then optionally "?" and key=value parameters
//     separated by "|" ([Parse], [URI.String]).
//   - Validation of the parameters ferry uses (endpoint, control,
//     control-mode, session-id, term-length, mtu, eos, linger, sparse,
//     tether, reliable, alias, interface, ttl, init-term-id, term-id,
//     term-offset) with Aeron's rules and units, and of the rules between
//     them that the driver enforces (see [Parse]). Errors name the key,
//     the value and what is allowed ([*ParamError]).
//   - Typed accessors for those parameters ([URI.Endpoint],
//     [URI.TermLength], [URI.Linger], …) and a [Builder] that produces
//     valid URIs.
//
// Parameters this package does not interpret (Aeron has many more, such
// as fc, cc, tags, gtag, rcv-wnd) are kept verbatim and in order: see
// [URI.Get], [URI.Params] and [URI.Unknown].
//
// # What it must never do
//
// It performs no I/O: it never resolves host names or checks that
// interfaces exist (the media driver does, and reports UNKNOWN_HOST or
// INVALID_CHANNEL). It never reorders, rewrites or drops parameters:
// [URI.String] writes them in insertion order exactly as given, so
// Parse(u.String()) gives u back. It never panics on input.
//
// # Callers must
//
//  1. Parse every user-given channel (configuration, command line) with
//     [Parse] and report its error as is: it says which key is wrong and
//     what is allowed.
//  2. Derive channels with [URI.With], [URI.WithSessionID] or
//     [URI.Edit] and [Builder.Build], never by string concatenation.
//  3. Pass [URI.String] to the Aeron client and the archive.
//
// # Who may import it
//
// Any ferry package; it depends only on the standard library.
package channel
