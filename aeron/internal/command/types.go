package command

import "fmt"

// CommandType is the ring-buffer record type id of a command sent by a
// client to the media driver (Aeron ControlProtocolEvents, §4.1).
type CommandType int32

// Command type ids. The payload of each is the flyweight named in its
// comment.
const (
	// CommandAddPublication adds a concurrent (shared) publication
	// (Publication flyweight).
	CommandAddPublication CommandType = 0x01
	// CommandRemovePublication releases a publication (Remove flyweight).
	CommandRemovePublication CommandType = 0x02
	// CommandAddExclusivePublication adds an exclusive publication
	// (Publication flyweight).
	CommandAddExclusivePublication CommandType = 0x03
	// CommandAddSubscription adds a subscription (Subscription flyweight).
	CommandAddSubscription CommandType = 0x04
	// CommandRemoveSubscription releases a subscription (Remove flyweight).
	CommandRemoveSubscription CommandType = 0x05
	// CommandClientKeepalive refreshes the client's heartbeat (Correlated
	// flyweight). Legacy: current Java and C clients write the heartbeat
	// counter instead (§9), but the driver still accepts it.
	CommandClientKeepalive CommandType = 0x06
	// CommandAddDestination adds a destination to a multi-destination
	// publication (Destination flyweight).
	CommandAddDestination CommandType = 0x07
	// CommandRemoveDestination removes a destination from a
	// multi-destination publication (Destination flyweight).
	CommandRemoveDestination CommandType = 0x08
	// CommandAddCounter allocates a client counter (Counter flyweight).
	CommandAddCounter CommandType = 0x09
	// CommandRemoveCounter frees a client counter (Remove flyweight).
	CommandRemoveCounter CommandType = 0x0A
	// CommandClientClose tells the driver that the client is closing
	// (Correlated flyweight, correlation id [NullCorrelationID]).
	CommandClientClose CommandType = 0x0B
	// CommandAddRcvDestination adds a destination to a multi-destination
	// subscription (Destination flyweight).
	CommandAddRcvDestination CommandType = 0x0C
	// CommandRemoveRcvDestination removes a destination from a
	// multi-destination subscription (Destination flyweight).
	CommandRemoveRcvDestination CommandType = 0x0D
	// CommandTerminateDriver asks the driver to terminate (TerminateDriver
	// flyweight); ignored unless the driver's termination validator
	// allows it.
	CommandTerminateDriver CommandType = 0x0E
	// CommandAddStaticCounter allocates a static counter (StaticCounter
	// flyweight). Not encoded by this package.
	CommandAddStaticCounter CommandType = 0x0F
	// CommandRejectImage rejects an image (RejectImage flyweight). Not
	// encoded by this package.
	CommandRejectImage CommandType = 0x10
	// CommandRemoveDestinationByID removes a destination by its
	// registration id (DestinationById flyweight). Not encoded by this
	// package.
	CommandRemoveDestinationByID CommandType = 0x11
)

var commandNames = map[CommandType]string{
	CommandAddPublication:          "ADD_PUBLICATION",
	CommandRemovePublication:       "REMOVE_PUBLICATION",
	CommandAddExclusivePublication: "ADD_EXCLUSIVE_PUBLICATION",
	CommandAddSubscription:         "ADD_SUBSCRIPTION",
	CommandRemoveSubscription:      "REMOVE_SUBSCRIPTION",
	CommandClientKeepalive:         "CLIENT_KEEPALIVE",
	CommandAddDestination:          "ADD_DESTINATION",
	CommandRemoveDestination:       "REMOVE_DESTINATION",
	CommandAddCounter:              "ADD_COUNTER",
	CommandRemoveCounter:           "REMOVE_COUNTER",
	CommandClientClose:             "CLIENT_CLOSE",
	CommandAddRcvDestination:       "ADD_RCV_DESTINATION",
	CommandRemoveRcvDestination:    "REMOVE_RCV_DESTINATION",
	CommandTerminateDriver:         "TERMINATE_DRIVER",
	CommandAddStaticCounter:        "ADD_STATIC_COUNTER",
	CommandRejectImage:             "REJECT_IMAGE",
	CommandRemoveDestinationByID:   "REMOVE_DESTINATION_BY_ID",
}

// String returns Aeron's name for the command, e.g. "ADD_PUBLICATION", or
// "CommandType(0x..)" for an id Aeron 1.47.3 does not define.
func (t CommandType) String() string {
	if name, ok := commandNames[t]; ok {
		return name
	}
	return fmt.Sprintf("CommandType(%#x)", int32(t))
}

// ResponseType is the broadcast record type id of a response or event sent
// by the media driver to all clients (§4.3).
type ResponseType int32

// Response type ids. The payload of each is the flyweight named in its
// comment; the decoder of that flyweight reads it.
const (
	// ResponseOnError reports a failed command ([DecodeErrorResponse]).
	ResponseOnError ResponseType = 0x0F01
	// ResponseOnAvailableImage announces a new image of a subscription
	// ([DecodeImageBuffersReady]).
	ResponseOnAvailableImage ResponseType = 0x0F02
	// ResponseOnPublicationReady completes ADD_PUBLICATION
	// ([DecodePublicationBuffersReady]).
	ResponseOnPublicationReady ResponseType = 0x0F03
	// ResponseOnOperationSuccess completes a command that has no other
	// response, e.g. a remove ([DecodeOperationSucceeded]).
	ResponseOnOperationSuccess ResponseType = 0x0F04
	// ResponseOnUnavailableImage reports that an image went away
	// ([DecodeImageMessage]).
	ResponseOnUnavailableImage ResponseType = 0x0F05
	// ResponseOnExclusivePublicationReady completes
	// ADD_EXCLUSIVE_PUBLICATION ([DecodePublicationBuffersReady]).
	ResponseOnExclusivePublicationReady ResponseType = 0x0F06
	// ResponseOnSubscriptionReady completes ADD_SUBSCRIPTION
	// ([DecodeSubscriptionReady]).
	ResponseOnSubscriptionReady ResponseType = 0x0F07
	// ResponseOnCounterReady completes ADD_COUNTER, or announces a counter
	// such as the client heartbeat counter ([DecodeCounterUpdate]).
	ResponseOnCounterReady ResponseType = 0x0F08
	// ResponseOnUnavailableCounter reports that a counter was freed
	// ([DecodeCounterUpdate]).
	ResponseOnUnavailableCounter ResponseType = 0x0F09
	// ResponseOnClientTimeout reports that the driver timed a client out
	// ([DecodeClientTimeout]).
	ResponseOnClientTimeout ResponseType = 0x0F0A
	// ResponseOnStaticCounter completes ADD_STATIC_COUNTER
	// ([DecodeStaticCounter]).
	ResponseOnStaticCounter ResponseType = 0x0F0B
	// ResponseOnPublicationError reports an error frame received for a
	// publication ([DecodePublicationErrorFrame]).
	ResponseOnPublicationError ResponseType = 0x0F0C
)

var responseNames = map[ResponseType]string{
	ResponseOnError:                     "ON_ERROR",
	ResponseOnAvailableImage:            "ON_AVAILABLE_IMAGE",
	ResponseOnPublicationReady:          "ON_PUBLICATION_READY",
	ResponseOnOperationSuccess:          "ON_OPERATION_SUCCESS",
	ResponseOnUnavailableImage:          "ON_UNAVAILABLE_IMAGE",
	ResponseOnExclusivePublicationReady: "ON_EXCLUSIVE_PUBLICATION_READY",
	ResponseOnSubscriptionReady:         "ON_SUBSCRIPTION_READY",
	ResponseOnCounterReady:              "ON_COUNTER_READY",
	ResponseOnUnavailableCounter:        "ON_UNAVAILABLE_COUNTER",
	ResponseOnClientTimeout:             "ON_CLIENT_TIMEOUT",
	ResponseOnStaticCounter:             "ON_STATIC_COUNTER",
	ResponseOnPublicationError:          "ON_PUBLICATION_ERROR",
}

// String returns Aeron's name for the response, e.g. "ON_ERROR", or
// "ResponseType(0x..)" for an id Aeron 1.47.3 does not define.
func (t ResponseType) String() string {
	if name, ok := responseNames[t]; ok {
		return name
	}
	return fmt.Sprintf("ResponseType(%#x)", int32(t))
}

// ErrorCode is the error code the driver puts in an ON_ERROR response and
// in a publication error frame (Aeron ErrorCode, §4.4).
type ErrorCode int32

// Driver error codes.
const (
	// ErrorCodeUnused is not sent for a real error.
	ErrorCodeUnused ErrorCode = 0
	// ErrorCodeInvalidChannel: the channel URI was rejected.
	ErrorCodeInvalidChannel ErrorCode = 1
	// ErrorCodeUnknownSubscription: no subscription has that registration
	// id.
	ErrorCodeUnknownSubscription ErrorCode = 2
	// ErrorCodeUnknownPublication: no publication has that registration id.
	ErrorCodeUnknownPublication ErrorCode = 3
	// ErrorCodeChannelEndpointError: a channel endpoint failed. The
	// response's correlation id field carries a channel-status counter id,
	// not a correlation id (§4.5).
	ErrorCodeChannelEndpointError ErrorCode = 4
	// ErrorCodeUnknownCounter: no counter has that registration id.
	ErrorCodeUnknownCounter ErrorCode = 5
	// ErrorCodeUnknownCommandTypeID: the driver does not know the command.
	ErrorCodeUnknownCommandTypeID ErrorCode = 6
	// ErrorCodeMalformedCommand: the command payload was too short or
	// inconsistent.
	ErrorCodeMalformedCommand ErrorCode = 7
	// ErrorCodeNotSupported: the operation is not supported.
	ErrorCodeNotSupported ErrorCode = 8
	// ErrorCodeUnknownHost: a host name in the channel did not resolve.
	ErrorCodeUnknownHost ErrorCode = 9
	// ErrorCodeResourceTemporarilyUnavailable: retry later.
	ErrorCodeResourceTemporarilyUnavailable ErrorCode = 10
	// ErrorCodeGenericError: any other error.
	ErrorCodeGenericError ErrorCode = 11
	// ErrorCodeStorageSpace: not enough storage space for the log buffers.
	ErrorCodeStorageSpace ErrorCode = 12
	// ErrorCodeImageRejected: the image was rejected.
	ErrorCodeImageRejected ErrorCode = 13
	// ErrorCodePublicationRevoked: the publication was revoked.
	ErrorCodePublicationRevoked ErrorCode = 14
)

var errorCodeNames = map[ErrorCode]string{
	ErrorCodeUnused:                         "UNUSED",
	ErrorCodeInvalidChannel:                 "INVALID_CHANNEL",
	ErrorCodeUnknownSubscription:            "UNKNOWN_SUBSCRIPTION",
	ErrorCodeUnknownPublication:             "UNKNOWN_PUBLICATION",
	ErrorCodeChannelEndpointError:           "CHANNEL_ENDPOINT_ERROR",
	ErrorCodeUnknownCounter:                 "UNKNOWN_COUNTER",
	ErrorCodeUnknownCommandTypeID:           "UNKNOWN_COMMAND_TYPE_ID",
	ErrorCodeMalformedCommand:               "MALFORMED_COMMAND",
	ErrorCodeNotSupported:                   "NOT_SUPPORTED",
	ErrorCodeUnknownHost:                    "UNKNOWN_HOST",
	ErrorCodeResourceTemporarilyUnavailable: "RESOURCE_TEMPORARILY_UNAVAILABLE",
	ErrorCodeGenericError:                   "GENERIC_ERROR",
	ErrorCodeStorageSpace:                   "STORAGE_SPACE",
	ErrorCodeImageRejected:                  "IMAGE_REJECTED",
	ErrorCodePublicationRevoked:             "PUBLICATION_REVOKED",
}

// String returns Aeron's name for the code, e.g. "INVALID_CHANNEL", or
// "ErrorCode(n)" for a code Aeron 1.47.3 does not define.
func (c ErrorCode) String() string {
	if name, ok := errorCodeNames[c]; ok {
		return name
	}
	return fmt.Sprintf("ErrorCode(%d)", int32(c))
}
