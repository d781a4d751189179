package command

import "testing"

// Golden values copied once from the Aeron 1.47.3 flyweights
// (io.aeron.command.*Flyweight, ControlProtocolEvents, ErrorCode,
// ChannelUri.MAX_URI_LENGTH, CountersManager) as listed in
// aeron-protocol.md §4. Change them only when the pinned Aeron version
// changes.
func TestLayoutGolden(t *testing.T) {
	for _, tc := range []struct {
		name      string
		got, want int
	}{
		{"correlated: client id", clientIDOffset, 0},
		{"correlated: correlation id", correlationIDOffset, 8},
		{"correlated: length", correlatedLength, 16},

		{"publication: stream id", publicationStreamIDOffset, 16},
		{"publication: channel length", publicationChannelLengthOffset, 20},
		{"publication: channel", publicationChannelOffset, 24},

		{"subscription: registration correlation id", subscriptionRegistrationIDOffset, 16},
		{"subscription: stream id", subscriptionStreamIDOffset, 24},
		{"subscription: channel length", subscriptionChannelLengthOffset, 28},
		{"subscription: channel", subscriptionChannelOffset, 32},

		{"remove: registration id", removeRegistrationIDOffset, 16},
		{"remove: length", removeLength, 24},

		{"destination: registration id", destinationRegistrationIDOffset, 16},
		{"destination: channel length", destinationChannelLengthOffset, 24},
		{"destination: channel", destinationChannelOffset, 28},

		{"counter: type id", counterTypeIDOffset, 16},
		{"counter: key length", counterKeyLengthOffset, 20},
		{"counter: key", counterKeyOffset, 24},
		{"counter: label length, empty key", counterLabelLengthOffset(0), 24},
		{"counter: label length, 1-byte key", counterLabelLengthOffset(1), 28},
		{"counter: label length, 4-byte key", counterLabelLengthOffset(4), 28},
		{"counter: label length, 5-byte key", counterLabelLengthOffset(5), 32},

		{"terminate driver: token length", terminateDriverTokenLengthOffset, 16},
		{"terminate driver: token", terminateDriverTokenOffset, 20},

		{"error response: offending correlation id", errorOffendingCorrelationIDOffset, 0},
		{"error response: error code", errorCodeOffset, 8},
		{"error response: message length", errorMessageLengthOffset, 12},
		{"error response: message", errorMessageOffset, 16},

		{"publication ready: correlation id", pubReadyCorrelationIDOffset, 0},
		{"publication ready: registration id", pubReadyRegistrationIDOffset, 8},
		{"publication ready: session id", pubReadySessionIDOffset, 16},
		{"publication ready: stream id", pubReadyStreamIDOffset, 20},
		{"publication ready: publication limit counter id", pubReadyPublicationLimitCounterIDOffset, 24},
		{"publication ready: channel status counter id", pubReadyChannelStatusCounterIDOffset, 28},
		{"publication ready: log file name length", pubReadyLogFileNameLengthOffset, 32},
		{"publication ready: log file name", pubReadyLogFileNameOffset, 36},

		{"subscription ready: correlation id", subReadyCorrelationIDOffset, 0},
		{"subscription ready: channel status counter id", subReadyChannelStatusCounterIDOffset, 8},
		{"subscription ready: length", subReadyLength, 12},

		{"image ready: correlation id", imageReadyCorrelationIDOffset, 0},
		{"image ready: session id", imageReadySessionIDOffset, 8},
		{"image ready: stream id", imageReadyStreamIDOffset, 12},
		{"image ready: subscription registration id", imageReadySubscriptionRegIDOffset, 16},
		{"image ready: subscriber position id", imageReadySubscriberPositionIDOffset, 24},
		{"image ready: log file name length", imageReadyLogFileNameLengthOffset, 28},
		{"image ready: log file name", imageReadyLogFileNameOffset, 32},
		{"image ready: source identity length, empty name", imageReadySourceIdentityLengthOffset(0), 32},
		{"image ready: source identity length, 1-byte name", imageReadySourceIdentityLengthOffset(1), 36},
		{"image ready: source identity length, 8-byte name", imageReadySourceIdentityLengthOffset(8), 40},

		{"operation succeeded: correlation id", opSucceededCorrelationIDOffset, 0},
		{"operation succeeded: length", opSucceededLength, 8},

		{"image message: correlation id", imageMsgCorrelationIDOffset, 0},
		{"image message: subscription registration id", imageMsgSubscriptionRegIDOffset, 8},
		{"image message: stream id", imageMsgStreamIDOffset, 16},
		{"image message: channel length", imageMsgChannelLengthOffset, 20},
		{"image message: channel", imageMsgChannelOffset, 24},

		{"counter update: correlation id", counterUpdateCorrelationIDOffset, 0},
		{"counter update: counter id", counterUpdateCounterIDOffset, 8},
		{"counter update: length", counterUpdateLength, 12},

		{"client timeout: client id", clientTimeoutClientIDOffset, 0},
		{"client timeout: length", clientTimeoutLength, 8},

		{"static counter: correlation id", staticCounterCorrelationIDOffset, 0},
		{"static counter: counter id", staticCounterCounterIDOffset, 8},
		{"static counter: length", staticCounterLength, 12},

		{"publication error: registration id", pubErrorRegistrationIDOffset, 0},
		{"publication error: destination registration id", pubErrorDestinationRegIDOffset, 8},
		{"publication error: session id", pubErrorSessionIDOffset, 16},
		{"publication error: stream id", pubErrorStreamIDOffset, 20},
		{"publication error: receiver id", pubErrorReceiverIDOffset, 24},
		{"publication error: group tag", pubErrorGroupTagOffset, 32},
		{"publication error: address type", pubErrorAddressTypeOffset, 40},
		{"publication error: port", pubErrorPortOffset, 42},
		{"publication error: address", pubErrorAddressOffset, 44},
		{"publication error: error code", pubErrorErrorCodeOffset, 60},
		{"publication error: message length", pubErrorMessageLengthOffset, 64},
		{"publication error: message", pubErrorMessageOffset, 68},
		{"publication error: IPv4 address length", pubErrorIPv4AddressLength, 4},
		{"publication error: address type IPv4", int(AddressTypeIPv4), 1},
		{"publication error: address type IPv6", int(AddressTypeIPv6), 2},

		{"max channel length", MaxChannelLength, 4095},
		{"max counter key length", MaxCounterKeyLength, 112},
		{"max counter label length", MaxCounterLabelLength, 380},
		{"null correlation id", int(NullCorrelationID), -1},
		{"null counter id", int(NullCounterID), -1},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %d, want %d", tc.name, tc.got, tc.want)
		}
	}
}

func TestTypeIDsGolden(t *testing.T) {
	for _, tc := range []struct {
		id   CommandType
		want int32
		name string
	}{
		{CommandAddPublication, 0x01, "ADD_PUBLICATION"},
		{CommandRemovePublication, 0x02, "REMOVE_PUBLICATION"},
		{CommandAddExclusivePublication, 0x03, "ADD_EXCLUSIVE_PUBLICATION"},
		{CommandAddSubscription, 0x04, "ADD_SUBSCRIPTION"},
		{CommandRemoveSubscription, 0x05, "REMOVE_SUBSCRIPTION"},
		{CommandClientKeepalive, 0x06, "CLIENT_KEEPALIVE"},
		{CommandAddDestination, 0x07, "ADD_DESTINATION"},
		{CommandRemoveDestination, 0x08, "REMOVE_DESTINATION"},
		{CommandAddCounter, 0x09, "ADD_COUNTER"},
		{CommandRemoveCounter, 0x0A, "REMOVE_COUNTER"},
		{CommandClientClose, 0x0B, "CLIENT_CLOSE"},
		{CommandAddRcvDestination, 0x0C, "ADD_RCV_DESTINATION"},
		{CommandRemoveRcvDestination, 0x0D, "REMOVE_RCV_DESTINATION"},
		{CommandTerminateDriver, 0x0E, "TERMINATE_DRIVER"},
		{CommandAddStaticCounter, 0x0F, "ADD_STATIC_COUNTER"},
		{CommandRejectImage, 0x10, "REJECT_IMAGE"},
		{CommandRemoveDestinationByID, 0x11, "REMOVE_DESTINATION_BY_ID"},
	} {
		if int32(tc.id) != tc.want || tc.id.String() != tc.name {
			t.Errorf("command %s = %#x, want %s = %#x", tc.id, int32(tc.id), tc.name, tc.want)
		}
	}
	if len(commandNames) != 17 {
		t.Errorf("%d command names, want 17", len(commandNames))
	}

	for _, tc := range []struct {
		id   ResponseType
		want int32
		name string
	}{
		{ResponseOnError, 0x0F01, "ON_ERROR"},
		{ResponseOnAvailableImage, 0x0F02, "ON_AVAILABLE_IMAGE"},
		{ResponseOnPublicationReady, 0x0F03, "ON_PUBLICATION_READY"},
		{ResponseOnOperationSuccess, 0x0F04, "ON_OPERATION_SUCCESS"},
		{ResponseOnUnavailableImage, 0x0F05, "ON_UNAVAILABLE_IMAGE"},
		{ResponseOnExclusivePublicationReady, 0x0F06, "ON_EXCLUSIVE_PUBLICATION_READY"},
		{ResponseOnSubscriptionReady, 0x0F07, "ON_SUBSCRIPTION_READY"},
		{ResponseOnCounterReady, 0x0F08, "ON_COUNTER_READY"},
		{ResponseOnUnavailableCounter, 0x0F09, "ON_UNAVAILABLE_COUNTER"},
		{ResponseOnClientTimeout, 0x0F0A, "ON_CLIENT_TIMEOUT"},
		{ResponseOnStaticCounter, 0x0F0B, "ON_STATIC_COUNTER"},
		{ResponseOnPublicationError, 0x0F0C, "ON_PUBLICATION_ERROR"},
	} {
		if int32(tc.id) != tc.want || tc.id.String() != tc.name {
			t.Errorf("response %s = %#x, want %s = %#x", tc.id, int32(tc.id), tc.name, tc.want)
		}
	}
	if len(responseNames) != 12 {
		t.Errorf("%d response names, want 12", len(responseNames))
	}

	for _, tc := range []struct {
		code ErrorCode
		want int32
		name string
	}{
		{ErrorCodeUnused, 0, "UNUSED"},
		{ErrorCodeInvalidChannel, 1, "INVALID_CHANNEL"},
		{ErrorCodeUnknownSubscription, 2, "UNKNOWN_SUBSCRIPTION"},
		{ErrorCodeUnknownPublication, 3, "UNKNOWN_PUBLICATION"},
		{ErrorCodeChannelEndpointError, 4, "CHANNEL_ENDPOINT_ERROR"},
		{ErrorCodeUnknownCounter, 5, "UNKNOWN_COUNTER"},
		{ErrorCodeUnknownCommandTypeID, 6, "UNKNOWN_COMMAND_TYPE_ID"},
		{ErrorCodeMalformedCommand, 7, "MALFORMED_COMMAND"},
		{ErrorCodeNotSupported, 8, "NOT_SUPPORTED"},
		{ErrorCodeUnknownHost, 9, "UNKNOWN_HOST"},
		{ErrorCodeResourceTemporarilyUnavailable, 10, "RESOURCE_TEMPORARILY_UNAVAILABLE"},
		{ErrorCodeGenericError, 11, "GENERIC_ERROR"},
		{ErrorCodeStorageSpace, 12, "STORAGE_SPACE"},
		{ErrorCodeImageRejected, 13, "IMAGE_REJECTED"},
		{ErrorCodePublicationRevoked, 14, "PUBLICATION_REVOKED"},
	} {
		if int32(tc.code) != tc.want || tc.code.String() != tc.name {
			t.Errorf("error code %s = %d, want %s = %d", tc.code, int32(tc.code), tc.name, tc.want)
		}
	}
	if len(errorCodeNames) != 15 {
		t.Errorf("%d error code names, want 15", len(errorCodeNames))
	}
}

func TestStringUnknown(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{CommandType(0x12).String(), "CommandType(0x12)"},
		{CommandType(0).String(), "CommandType(0x0)"},
		{ResponseType(0x0F0D).String(), "ResponseType(0xf0d)"},
		{ErrorCode(15).String(), "ErrorCode(15)"},
		{ErrorCode(-1).String(), "ErrorCode(-1)"},
		{AddressTypeIPv4.String(), "IPv4"},
		{AddressTypeIPv6.String(), "IPv6"},
		{AddressType(3).String(), "AddressType(3)"},
	} {
		if tc.got != tc.want {
			t.Errorf("String() = %q, want %q", tc.got, tc.want)
		}
	}
}
