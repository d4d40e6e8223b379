-- +goose Up
-- Sending numbers. A number belongs to one organization, since an inbound message's To number
-- is what selects the organization.
CREATE TABLE phone_numbers (
    id              uuid PRIMARY KEY,
    organization_id uuid NOT NULL,
    number          text NOT NULL UNIQUE,
    is_default      boolean NOT NULL DEFAULT false,
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX phone_numbers_one_default ON phone_numbers (organization_id) WHERE is_default;
CREATE INDEX phone_numbers_org ON phone_numbers (organization_id, created_at);

-- The message log, both directions. contact_phone is the other party (To of an outgoing
-- message, From of an incoming one); our_number is ours.
CREATE TABLE messages (
    id                    uuid PRIMARY KEY,
    organization_id       uuid NOT NULL,
    direction             text NOT NULL CHECK (direction IN ('incoming', 'outgoing')),
    contact_phone         text NOT NULL,
    our_number            text NOT NULL,
    phone_number_id       uuid,
    body                  text NOT NULL,
    media_urls            text[] NOT NULL DEFAULT '{}',
    is_mms                boolean NOT NULL DEFAULT false,
    -- Outgoing only: queued → sending → sent → delivered | undelivered | failed.
    status                text CHECK (status IN ('queued', 'sending', 'sent', 'delivered', 'undelivered', 'failed')),
    provider              text NOT NULL,
    provider_message_id   text,
    error_code            text,
    credits               integer NOT NULL DEFAULT 0 CHECK (credits >= 0),
    -- False for messages that cost nothing: keyword confirmations, sandbox organizations.
    billable              boolean NOT NULL DEFAULT true,
    -- The billing hold the credits are posted against (a campaign's, or the message's own).
    hold_id               text,
    -- reply, campaign, poll, system (keyword confirmations) or inbound.
    source_kind           text NOT NULL,
    source_id             text,
    dedupe_key            text,
    quiet_hours_timezone  text,
    -- Incoming only.
    attributed_message_id uuid,
    sentiment             text,
    sentiment_score       double precision,
    category              text,
    requires_response     boolean,
    opt_out_detected      boolean,
    keyword               text,
    created_at            timestamptz NOT NULL DEFAULT now(),
    sent_at               timestamptz,
    status_at             timestamptz
);
CREATE UNIQUE INDEX messages_provider_id ON messages (provider, provider_message_id) WHERE provider_message_id IS NOT NULL;
CREATE UNIQUE INDEX messages_dedupe ON messages (organization_id, dedupe_key) WHERE dedupe_key IS NOT NULL;
CREATE INDEX messages_thread ON messages (organization_id, contact_phone, created_at DESC, id DESC);
CREATE INDEX messages_unsettled ON messages (created_at) WHERE status IN ('queued', 'sending');

-- One row per thread, kept with each message so the list is one index scan.
CREATE TABLE conversations (
    organization_id      uuid NOT NULL,
    phone                text NOT NULL,
    last_message         text NOT NULL,
    last_message_at      timestamptz NOT NULL,
    last_direction       text NOT NULL,
    unread_count         integer NOT NULL DEFAULT 0 CHECK (unread_count >= 0),
    is_archived          boolean NOT NULL DEFAULT false,
    is_starred           boolean NOT NULL DEFAULT false,
    PRIMARY KEY (organization_id, phone)
);
CREATE INDEX conversations_recent ON conversations (organization_id, last_message_at DESC, phone);

-- Short links of outgoing messages; the code is global since the redirect route has no org.
CREATE TABLE short_links (
    code            text PRIMARY KEY,
    organization_id uuid NOT NULL,
    message_id      uuid NOT NULL,
    url             text NOT NULL,
    clicks          integer NOT NULL DEFAULT 0,
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX short_links_message ON short_links (organization_id, message_id);

CREATE TABLE link_clicks (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    code            text NOT NULL REFERENCES short_links (code) ON DELETE CASCADE,
    organization_id uuid NOT NULL,
    user_agent      text NOT NULL,
    clicked_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX link_clicks_code ON link_clicks (code, clicked_at);

-- +goose Down
DROP TABLE link_clicks;
DROP TABLE short_links;
DROP TABLE conversations;
DROP TABLE messages;
DROP TABLE phone_numbers;
