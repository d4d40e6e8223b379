-- +goose Up
-- One account per organization: its settings and its two spendable balances. Balances change
-- only through single statements that also write the ledger row explaining the change; the
-- CHECKs make a negative balance impossible whatever the concurrency.
CREATE TABLE accounts (
    organization_id             uuid PRIMARY KEY,
    pricing_model               text NOT NULL DEFAULT 'per_message'
        CHECK (pricing_model IN ('unlimited', 'per_message', 'full_service')),
    billing_status              text NOT NULL DEFAULT 'active'
        CHECK (billing_status IN ('active', 'past_due', 'suspended', 'overage_warning', 'archived')),
    brand                       text NOT NULL DEFAULT 'chorus',
    -- Purchased credits.
    available                   integer NOT NULL DEFAULT 0 CHECK (available >= 0),
    -- Credits included in a full_service plan's period.
    included                    integer NOT NULL DEFAULT 0 CHECK (included >= 0),
    -- The subscription, NULL (all of it) on a credit-only plan.
    subscription_id             text,
    plan_type                   text,
    billing_interval            text,
    subscription_status         text,
    paid_through                date,
    current_period_end          timestamptz,
    next_billing_date           date,
    subscription_provider       text,
    customer_portal_url         text,
    subscription_management_url text,
    created_at                  timestamptz NOT NULL DEFAULT now(),
    updated_at                  timestamptz NOT NULL DEFAULT now()
);

-- A hold reserves credits for a bulk send: placing it moves them out of the balances, posts
-- consume them per message, the release returns the rest. What is left is kept per source so a
-- release returns included credits to included and purchased ones to available.
CREATE TABLE holds (
    organization_id     uuid NOT NULL,
    id                  uuid NOT NULL,
    -- Credits asked for; a metered hold reserved all of them.
    credits             integer NOT NULL CHECK (credits > 0),
    -- false on an unlimited plan: the hold reserves nothing and posts against it cost nothing.
    metered             boolean NOT NULL,
    included_remaining  integer NOT NULL CHECK (included_remaining >= 0),
    available_remaining integer NOT NULL CHECK (available_remaining >= 0),
    released_at         timestamptz,
    created_at          timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (organization_id, id)
);

-- The ledger is append-only: one row per balance change, unique per (kind, key) so a retried
-- grant, charge, hold or release is a no-op. Per organization, sum(available_delta) is the
-- available balance, sum(included_delta) the included one, and sum(held_delta) what its holds
-- have left.
CREATE TABLE ledger (
    organization_id uuid NOT NULL,
    id              uuid NOT NULL,
    -- grant: credits added (key: the idempotency key); debit: one message's cost, charged from
    -- the balances or posted against a hold (key: the message id, so a message is debited once
    -- whichever way); hold and release: a hold placed and released (key: the hold id).
    kind            text NOT NULL CHECK (kind IN ('grant', 'debit', 'hold', 'release')),
    key             text NOT NULL CHECK (key <> ''),
    hold_id         uuid,
    available_delta integer NOT NULL,
    included_delta  integer NOT NULL,
    held_delta      integer NOT NULL,
    -- Credits a grant added or a debit cost (a post's cost is its held_delta).
    amount          integer NOT NULL CHECK (amount >= 0),
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (organization_id, id),
    CONSTRAINT ledger_org_kind_key UNIQUE (organization_id, kind, key)
);

CREATE INDEX ledger_org_created ON ledger (organization_id, created_at DESC, id DESC);

-- +goose StatementBegin
CREATE FUNCTION ledger_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'billing.ledger is append-only';
END
$$;
-- +goose StatementEnd
CREATE TRIGGER ledger_append_only BEFORE UPDATE OR DELETE ON ledger
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_append_only();

-- The catalog of credit packs every organization may buy. It is the platform's, not an
-- organization's, so it is the one table without organization_id.
CREATE TABLE credit_products (
    id             text PRIMARY KEY,
    name           text NOT NULL CHECK (name <> ''),
    credits_amount integer NOT NULL CHECK (credits_amount > 0),
    price_cents    integer NOT NULL CHECK (price_cents >= 0),
    active         boolean NOT NULL DEFAULT true,
    position       integer NOT NULL DEFAULT 0
);

INSERT INTO credit_products (id, name, credits_amount, price_cents, position) VALUES
    ('credits-500', '500 credits', 500, 1500, 1),
    ('credits-2000', '2,000 credits', 2000, 5000, 2),
    ('credits-10000', '10,000 credits', 10000, 20000, 3),
    ('credits-50000', '50,000 credits', 50000, 80000, 4);

-- +goose Down
DROP TABLE credit_products;
DROP TABLE ledger;
DROP FUNCTION ledger_append_only();
DROP TABLE holds;
DROP TABLE accounts;
