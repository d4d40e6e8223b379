package carrier

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
)

// SandboxName is the sandbox carrier's name, in routes and on stored messages.
const SandboxName = "sandbox"

// Sandbox is a carrier that accepts every message and sends nothing. What it would report
// about a message depends on the destination's last four digits (SandboxOutcome); the
// dispatcher schedules those reports as jobs in the transaction that records the acceptance,
// and applies them through the status path real carriers' callbacks take.
type Sandbox struct{}

// Name implements Provider.
func (Sandbox) Name() string { return SandboxName }

// Send implements Provider: it accepts m under a fresh carrier id.
func (Sandbox) Send(context.Context, Outgoing) (Accepted, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return Accepted{}, fmt.Errorf("sandbox: message id: %w", err)
	}
	return Accepted{ProviderMessageID: "SB" + hex.EncodeToString(b[:])}, nil
}

// Find implements Provider: the sandbox has none. It texts nobody; what it "delivers" is the
// reports scheduled in the transaction that records its acceptance, so a message whose
// acceptance was never recorded (its process died after Send) reached no one, and sending it
// again is what a real carrier that never got it would need.
func (Sandbox) Find(context.Context, Lookup) ([]Candidate, error) { return nil, nil }

// SandboxOutcome is the sequence of statuses the sandbox reports for a destination: 0006 the
// carrier rejects it (failed), 0007 it is sent then undelivered, anything else delivered.
func SandboxOutcome(to string) []string {
	switch {
	case strings.HasSuffix(to, "0006"):
		return []string{StatusFailed}
	case strings.HasSuffix(to, "0007"):
		return []string{StatusSent, StatusUndelivered}
	default:
		return []string{StatusDelivered}
	}
}
