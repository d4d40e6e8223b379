-- +goose Up
-- One row per inbound message a campaign answers automatically, written with the event that
-- chose the answer: the inbound message's id makes it at most one answer per message, and
-- (campaign, phone, answer_key) gives a contact each of a campaign's answers at most once
-- (two auto-responders cannot answer each other for ever). status: queued (a job will hand it
-- to messaging), sent (messaging has it: message_id), skipped (the contact may not be texted:
-- reason), failed (messaging refused it for good: reason).
CREATE TABLE auto_replies (
    inbound_message_id uuid NOT NULL,
    organization_id    uuid NOT NULL,
    campaign_id        uuid NOT NULL REFERENCES campaigns (id) ON DELETE CASCADE,
    phone              text NOT NULL,
    answer_key         text NOT NULL,
    body               text NOT NULL,
    status             text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'sent', 'skipped', 'failed')),
    reason             text,
    message_id         uuid,
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (organization_id, inbound_message_id)
);
CREATE UNIQUE INDEX auto_replies_once_per_answer ON auto_replies (campaign_id, phone, answer_key);

-- +goose Down
DROP TABLE auto_replies;
