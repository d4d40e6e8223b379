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

// SandboxReport is what the sandbox carrier will report about one accepted message.
type SandboxReport struct {
	MessageID         string   // ours, as a real carrier gets it in the status callback URL
	ProviderMessageID string   // the sandbox's
	Statuses          []string // reported in order
}

// Sandbox is a carrier that accepts every message and reports its outcome later through the
// status path real carriers use. The outcome depends on the destination's last four digits:
// 0006 the carrier rejects it (failed), 0007 it is sent then undelivered, anything else
// delivered.
type Sandbox struct {
	schedule func(ctx context.Context, r SandboxReport) error
}

// NewSandbox returns the sandbox carrier; schedule must durably queue the report (it stands
// for the carrier's own queue, so it must not depend on the sender's transaction).
func NewSandbox(schedule func(ctx context.Context, r SandboxReport) error) *Sandbox {
	return &Sandbox{schedule: schedule}
}

// Name implements Provider.
func (s *Sandbox) Name() string { return SandboxName }

// Send implements Provider: it accepts m and queues its outcome.
func (s *Sandbox) Send(ctx context.Context, m Outgoing) (Accepted, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return Accepted{}, fmt.Errorf("sandbox: message id: %w", err)
	}
	id := "SB" + hex.EncodeToString(b[:])
	if err := s.schedule(ctx, SandboxReport{MessageID: m.MessageID, ProviderMessageID: id, Statuses: SandboxOutcome(m.To)}); err != nil {
		return Accepted{}, fmt.Errorf("sandbox: %w: %w", ErrUnavailable, err)
	}
	return Accepted{ProviderMessageID: id}, nil
}

// SandboxOutcome is the sequence of statuses the sandbox reports for a destination.
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
