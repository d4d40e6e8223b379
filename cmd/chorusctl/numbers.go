package main

import (
	"context"

	"github.com/chorus-sms/chorus/pkg/registry"
	messagingv1 "github.com/chorus-sms/chorus/proto/gen/go/messaging/v1"
)

// addedNumber is what `number add` prints, in this order.
type addedNumber struct {
	PhoneNumberID string `json:"phoneNumberId"`
	Number        string `json:"number"`
	IsDefault     bool   `json:"isDefault"`
	// MessagesPerSecond is the number's rate: its own, else the service's default.
	MessagesPerSecond int32 `json:"messagesPerSecond"`
}

// addNumber gives org a sending number through the messaging service, with a rate of its own
// when mps is positive.
func addNumber(ctx context.Context, org, number string, isDefault bool, mps int) (*addedNumber, error) {
	conn, err := dial(registry.Messaging)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	res, err := messagingv1.NewMessagingServiceClient(conn).AddNumber(ctx, &messagingv1.AddNumberRequest{
		OrganizationId: org, Number: number, IsDefault: isDefault, MessagesPerSecond: int32(mps),
	})
	if err != nil {
		return nil, err
	}
	return &addedNumber{PhoneNumberID: res.GetPhoneNumberId(), Number: res.GetNumber(), IsDefault: res.GetIsDefault(),
		MessagesPerSecond: res.GetMessagesPerSecond()}, nil
}
