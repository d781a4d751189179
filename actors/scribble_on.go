//go:build ferry_scribble

package actors

// scribblePayloads: the end-to-end tests build ferry with -tags ferry_scribble, so that a
// payload buffer reused while Pulsar's client still read it would put garbage into the topic,
// where the tests compare every message byte for byte.
const scribblePayloads = true
