-- +goose Up
-- One row per campaign. Counters are kept from messaging's events (recipients' statuses move
-- them), never counted over the message log when read.
CREATE TABLE campaigns (
    id                   uuid PRIMARY KEY,
    organization_id      uuid NOT NULL,
    name                 text NOT NULL,
    status               text NOT NULL CHECK (status IN ('draft', 'scheduled', 'pending', 'queued', 'sending', 'completed', 'failed', 'paused')),
    -- The status a paused campaign resumes to.
    paused_from          text CHECK (paused_from IN ('pending', 'queued', 'sending')),
    channel              text NOT NULL DEFAULT 'text',
    message              text NOT NULL DEFAULT '',
    media_url            text,
    segment_id           uuid,
    -- {"tags": [...], "tagsLogic": "OR"|"AND"}
    contact_filter       jsonb,
    from_phone_number_id uuid,
    scheduled_for        timestamptz,
    timezone             text,
    force_route          text NOT NULL DEFAULT 'AUTO' CHECK (force_route IN ('AUTO', 'SMS', 'MMS')),
    normalize_text       boolean NOT NULL DEFAULT true,
    is_ab_test           boolean NOT NULL DEFAULT false,
    message_variant_a    text,
    message_variant_b    text,
    ab_test_wait_minutes integer NOT NULL DEFAULT 60 CHECK (ab_test_wait_minutes BETWEEN 0 AND 1440),
    auto_reply_enabled   boolean NOT NULL DEFAULT false,
    yes_response         text,
    no_response          text,
    faq_replies          jsonb NOT NULL DEFAULT '[]',
    -- Each submission (immediate or scheduled) gets a number, so that a start job of an earlier
    -- submission (a scheduled campaign canceled back to draft and submitted again) does nothing.
    submission           integer NOT NULL DEFAULT 0,
    total_count          integer NOT NULL DEFAULT 0 CHECK (total_count >= 0),
    sent_count           integer NOT NULL DEFAULT 0 CHECK (sent_count >= 0),
    failed_count         integer NOT NULL DEFAULT 0 CHECK (failed_count >= 0),
    delivered_count      integer NOT NULL DEFAULT 0 CHECK (delivered_count >= 0),
    reply_count          integer NOT NULL DEFAULT 0 CHECK (reply_count >= 0),
    -- Credits held for the send (the hold's id is the campaign's id); 0 when none was placed.
    held_credits         integer NOT NULL DEFAULT 0 CHECK (held_credits >= 0),
    -- Fan-out progress: the audience is stored (recipients) before anything is queued.
    audience_resolved    boolean NOT NULL DEFAULT false,
    failure_reason       text,
    created_at           timestamptz NOT NULL,
    updated_at           timestamptz NOT NULL,
    started_at           timestamptz,
    completed_at         timestamptz,
    canceled_at          timestamptz
);
CREATE INDEX campaigns_org_newest ON campaigns (organization_id, created_at DESC, id DESC);

-- One row per (campaign, contact): the idempotency key of the whole send. The rendered text and
-- its price are stored when the audience is resolved; message_id once messaging queued it.
-- status follows messaging's events forward only: queued → sent → delivered | undelivered | failed.
CREATE TABLE recipients (
    campaign_id     uuid NOT NULL REFERENCES campaigns (id) ON DELETE CASCADE,
    contact_id      uuid NOT NULL,
    organization_id uuid NOT NULL,
    phone           text NOT NULL,
    body            text NOT NULL,
    credits         integer NOT NULL CHECK (credits >= 0),
    message_id      uuid,
    status          text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'sent', 'delivered', 'undelivered', 'failed')),
    PRIMARY KEY (campaign_id, contact_id)
);
CREATE UNIQUE INDEX recipients_phone ON recipients (campaign_id, phone);
CREATE INDEX recipients_unqueued ON recipients (campaign_id, contact_id) WHERE message_id IS NULL;

-- +goose Down
DROP TABLE recipients;
DROP TABLE campaigns;
