package command

// Layouts of the Aeron 1.47.3 control-protocol flyweights
// (io.aeron.command.*Flyweight; aeron-protocol.md §4.2 and §4.4). All
// integers are little-endian. An "ASCII string" is an int32 length
// followed by that many bytes, no terminator. layout_test.go pins every
// value.

const (
	sizeofInt16 = 2
	sizeofInt32 = 4
	sizeofInt64 = 8

	// stringLengthSize is the size of the int32 length prefix of an Agrona
	// ASCII string.
	stringLengthSize = sizeofInt32
	// varFieldAlignment: a variable-length field that is followed by
	// another one (counter key, image log file name) is padded to this
	// alignment so that the next length prefix is aligned (SBE 2.0).
	varFieldAlignment = sizeofInt32
	// ipv6AddressLength is the size of the address slot of a publication
	// error frame; IPv4 addresses use its first 4 bytes.
	ipv6AddressLength = 16
)

// Correlated prefix, at the start of every command:
//
//	0           8                16
//	| client id | correlation id | command fields ...
const (
	clientIDOffset      = 0
	correlationIDOffset = clientIDOffset + sizeofInt64
	correlatedLength    = correlationIDOffset + sizeofInt64
)

// Publication command (ADD_PUBLICATION, ADD_EXCLUSIVE_PUBLICATION):
//
//	16          20               24
//	| stream id | channel length | channel ...
const (
	publicationStreamIDOffset      = correlatedLength
	publicationChannelLengthOffset = publicationStreamIDOffset + sizeofInt32
	publicationChannelOffset       = publicationChannelLengthOffset + stringLengthSize
)

// Subscription command (ADD_SUBSCRIPTION):
//
//	16                           24          28               32
//	| registration corr. id (-1) | stream id | channel length | channel ...
const (
	subscriptionRegistrationIDOffset = correlatedLength
	subscriptionStreamIDOffset       = subscriptionRegistrationIDOffset + sizeofInt64
	subscriptionChannelLengthOffset  = subscriptionStreamIDOffset + sizeofInt32
	subscriptionChannelOffset        = subscriptionChannelLengthOffset + stringLengthSize
)

// Remove command (REMOVE_PUBLICATION, REMOVE_SUBSCRIPTION, REMOVE_COUNTER):
//
//	16                24
//	| registration id |
const (
	removeRegistrationIDOffset = correlatedLength
	removeLength               = removeRegistrationIDOffset + sizeofInt64
)

// Destination command (ADD/REMOVE_DESTINATION, ADD/REMOVE_RCV_DESTINATION):
//
//	16                        24               28
//	| pub/sub registration id | channel length | channel ...
const (
	destinationRegistrationIDOffset = correlatedLength
	destinationChannelLengthOffset  = destinationRegistrationIDOffset + sizeofInt64
	destinationChannelOffset        = destinationChannelLengthOffset + stringLengthSize
)

// Counter command (ADD_COUNTER):
//
//	16        20           24                         24+align(k,4)  +4
//	| type id | key length | key (k bytes) + padding  | label length | label ...
//
// The label length follows the key padded to varFieldAlignment
// (counterLabelLengthOffset).
const (
	counterTypeIDOffset    = correlatedLength
	counterKeyLengthOffset = counterTypeIDOffset + sizeofInt32
	counterKeyOffset       = counterKeyLengthOffset + stringLengthSize
)

// counterLabelLengthOffset is the offset of the label length in an
// ADD_COUNTER command whose key is keyLength bytes long.
func counterLabelLengthOffset(keyLength int) int {
	return counterKeyOffset + align(keyLength, varFieldAlignment)
}

// TerminateDriver command (TERMINATE_DRIVER):
//
//	16             20
//	| token length | token ...
const (
	terminateDriverTokenLengthOffset = correlatedLength
	terminateDriverTokenOffset       = terminateDriverTokenLengthOffset + stringLengthSize
)

// ErrorResponse (ON_ERROR):
//
//	0                        8            12               16
//	| offending corr. id     | error code | message length | message ...
const (
	errorOffendingCorrelationIDOffset = 0
	errorCodeOffset                   = errorOffendingCorrelationIDOffset + sizeofInt64
	errorMessageLengthOffset          = errorCodeOffset + sizeofInt32
	errorMessageOffset                = errorMessageLengthOffset + stringLengthSize
)

// PublicationBuffersReady (ON_PUBLICATION_READY,
// ON_EXCLUSIVE_PUBLICATION_READY):
//
//	0          8                16           20          24            28                 32              36
//	| corr. id | registration id | session id | stream id | pub-lmt id | channel-status id | log name length | log name ...
const (
	pubReadyCorrelationIDOffset             = 0
	pubReadyRegistrationIDOffset            = pubReadyCorrelationIDOffset + sizeofInt64
	pubReadySessionIDOffset                 = pubReadyRegistrationIDOffset + sizeofInt64
	pubReadyStreamIDOffset                  = pubReadySessionIDOffset + sizeofInt32
	pubReadyPublicationLimitCounterIDOffset = pubReadyStreamIDOffset + sizeofInt32
	pubReadyChannelStatusCounterIDOffset    = pubReadyPublicationLimitCounterIDOffset + sizeofInt32
	pubReadyLogFileNameLengthOffset         = pubReadyChannelStatusCounterIDOffset + sizeofInt32
	pubReadyLogFileNameOffset               = pubReadyLogFileNameLengthOffset + stringLengthSize
)

// SubscriptionReady (ON_SUBSCRIPTION_READY):
//
//	0          8                   12
//	| corr. id | channel-status id |
const (
	subReadyCorrelationIDOffset          = 0
	subReadyChannelStatusCounterIDOffset = subReadyCorrelationIDOffset + sizeofInt64
	subReadyLength                       = subReadyChannelStatusCounterIDOffset + sizeofInt32
)

// ImageBuffersReady (ON_AVAILABLE_IMAGE):
//
//	0          8            12          16                      24            28                32
//	| corr. id | session id | stream id | subscription reg. id  | sub-pos id    | log name length | log name + pad ...
//
// then, at 32 + align(log name length, 4): source identity length, source
// identity.
const (
	imageReadyCorrelationIDOffset        = 0
	imageReadySessionIDOffset            = imageReadyCorrelationIDOffset + sizeofInt64
	imageReadyStreamIDOffset             = imageReadySessionIDOffset + sizeofInt32
	imageReadySubscriptionRegIDOffset    = imageReadyStreamIDOffset + sizeofInt32
	imageReadySubscriberPositionIDOffset = imageReadySubscriptionRegIDOffset + sizeofInt64
	imageReadyLogFileNameLengthOffset    = imageReadySubscriberPositionIDOffset + sizeofInt32
	imageReadyLogFileNameOffset          = imageReadyLogFileNameLengthOffset + stringLengthSize
)

// imageReadySourceIdentityLengthOffset is the offset of the source identity
// length in an ImageBuffersReady whose log file name is nameLength bytes
// long.
func imageReadySourceIdentityLengthOffset(nameLength int) int {
	return imageReadyLogFileNameOffset + align(nameLength, varFieldAlignment)
}

// OperationSucceeded (ON_OPERATION_SUCCESS):
//
//	0          8
//	| corr. id |
const (
	opSucceededCorrelationIDOffset = 0
	opSucceededLength              = opSucceededCorrelationIDOffset + sizeofInt64
)

// ImageMessage (ON_UNAVAILABLE_IMAGE):
//
//	0                8                      16          20               24
//	| image corr. id | subscription reg. id | stream id | channel length | channel ...
const (
	imageMsgCorrelationIDOffset     = 0
	imageMsgSubscriptionRegIDOffset = imageMsgCorrelationIDOffset + sizeofInt64
	imageMsgStreamIDOffset          = imageMsgSubscriptionRegIDOffset + sizeofInt64
	imageMsgChannelLengthOffset     = imageMsgStreamIDOffset + sizeofInt32
	imageMsgChannelOffset           = imageMsgChannelLengthOffset + stringLengthSize
)

// CounterUpdate (ON_COUNTER_READY, ON_UNAVAILABLE_COUNTER) and
// StaticCounter (ON_STATIC_COUNTER) share one layout:
//
//	0          8            12
//	| corr. id | counter id |
const (
	counterUpdateCorrelationIDOffset = 0
	counterUpdateCounterIDOffset     = counterUpdateCorrelationIDOffset + sizeofInt64
	counterUpdateLength              = counterUpdateCounterIDOffset + sizeofInt32

	staticCounterCorrelationIDOffset = 0
	staticCounterCounterIDOffset     = staticCounterCorrelationIDOffset + sizeofInt64
	staticCounterLength              = staticCounterCounterIDOffset + sizeofInt32
)

// ClientTimeout (ON_CLIENT_TIMEOUT):
//
//	0           8
//	| client id |
const (
	clientTimeoutClientIDOffset = 0
	clientTimeoutLength         = clientTimeoutClientIDOffset + sizeofInt64
)

// PublicationErrorFrame (ON_PUBLICATION_ERROR):
//
//	0                 8                  16           20          24            32          40          42     44                60           64               68
//	| registration id | destination reg. | session id | stream id | receiver id | group tag | addr type | port | address (16)   | error code | message length | message ...
const (
	pubErrorRegistrationIDOffset   = 0
	pubErrorDestinationRegIDOffset = pubErrorRegistrationIDOffset + sizeofInt64
	pubErrorSessionIDOffset        = pubErrorDestinationRegIDOffset + sizeofInt64
	pubErrorStreamIDOffset         = pubErrorSessionIDOffset + sizeofInt32
	pubErrorReceiverIDOffset       = pubErrorStreamIDOffset + sizeofInt32
	pubErrorGroupTagOffset         = pubErrorReceiverIDOffset + sizeofInt64
	pubErrorAddressTypeOffset      = pubErrorGroupTagOffset + sizeofInt64
	pubErrorPortOffset             = pubErrorAddressTypeOffset + sizeofInt16
	pubErrorAddressOffset          = pubErrorPortOffset + sizeofInt16
	pubErrorErrorCodeOffset        = pubErrorAddressOffset + ipv6AddressLength
	pubErrorMessageLengthOffset    = pubErrorErrorCodeOffset + sizeofInt32
	pubErrorMessageOffset          = pubErrorMessageLengthOffset + stringLengthSize
	pubErrorIPv4AddressLength      = sizeofInt32
)

// Protocol limits and null values.
const (
	// MaxChannelLength is the longest channel URI the driver accepts
	// (ChannelUri.MAX_URI_LENGTH in Aeron 1.47.3); the encoders reject
	// longer channels with [ErrTooLong].
	MaxChannelLength = 4095
	// MaxCounterKeyLength is the longest counter key (CountersManager
	// MAX_KEY_LENGTH: the key area of a 512-byte metadata record).
	MaxCounterKeyLength = 112
	// MaxCounterLabelLength is the longest counter label (CountersManager
	// MAX_LABEL_LENGTH).
	MaxCounterLabelLength = 380

	// NullCorrelationID is the correlation id of commands the driver never
	// answers (CLIENT_CLOSE, TERMINATE_DRIVER), and the registration
	// correlation id a client sends in ADD_SUBSCRIPTION (Aeron.NULL_VALUE).
	NullCorrelationID int64 = -1
	// NullCounterID is the counter id the driver sends when it allocated no
	// counter, e.g. the channel-status counter of an IPC subscription.
	NullCounterID int32 = -1
)

// align rounds n up to a multiple of alignment, a power of two. n must be
// non-negative and at most a few bytes below the int range (callers check
// it against the payload length first).
func align(n, alignment int) int {
	return (n + alignment - 1) &^ (alignment - 1)
}
