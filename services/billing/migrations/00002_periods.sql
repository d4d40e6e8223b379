-- +goose Up
-- A full_service plan's included credits renew every period: when current_period_end passes,
-- the included credits left expire and included_per_period are granted for the next period, in
-- one statement that writes the expiry and renewal ledger rows with it.
ALTER TABLE accounts
    -- Included credits granted every period; NULL: included credits are granted by hand (an
    -- account set up before plans, or by a provider integration) and never expire.
    ADD COLUMN included_per_period integer CHECK (included_per_period > 0),
    -- The period end later ones are counted from (see next_period_end); NULL until the first
    -- renewal, and again whenever the period end is set: current_period_end is the anchor then.
    ADD COLUMN period_anchor timestamptz,
    -- Renewals so far: a hold remembers the one its included credits were taken in.
    ADD COLUMN period_number integer NOT NULL DEFAULT 0,
    -- A plan always has a period that can end, so its renewals cannot silently stop.
    ADD CONSTRAINT accounts_plan_period CHECK (included_per_period IS NULL
        OR (billing_interval IN ('month', 'year') AND current_period_end IS NOT NULL));

-- The sweep's question: whose period has ended?
CREATE INDEX accounts_period_end ON accounts (current_period_end) WHERE included_per_period IS NOT NULL;

-- The account's period_number when the hold was placed. Included credits still on the hold
-- when it is released after a renewal belong to a period that is over: they expire then
-- instead of going back to the new period's included balance.
ALTER TABLE holds ADD COLUMN included_period integer NOT NULL DEFAULT 0;

-- renewal: a period's included credits granted (key: the new period's end, so a period is
-- granted once whoever renews it). expiry: included credits that expired unspent, at a renewal
-- (key: the new period's end) or left on a hold released after one (key: the hold id).
-- refund: a message's debit given back after the carrier failed it (key: the message id).
ALTER TABLE ledger DROP CONSTRAINT ledger_kind_check,
    ADD CONSTRAINT ledger_kind_check CHECK (kind IN ('grant', 'debit', 'hold', 'release', 'renewal', 'expiry', 'refund'));

-- next_period_end is the first end after `after` of periods counted from anchor, every month
-- or year, in UTC. Counting from the anchor rather than from the previous end keeps the day:
-- periods anchored on Jan 31 end Feb 28 (29 in a leap year), Mar 31, Apr 30, ... instead of
-- drifting to the 28th. Whole periods that passed unrenewed are skipped, not granted.
-- +goose StatementBegin
CREATE FUNCTION next_period_end(anchor timestamptz, billing_interval text, after timestamptz)
RETURNS timestamptz LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT min(e.period_end)
    FROM (SELECT CASE billing_interval WHEN 'month' THEN 1 WHEN 'year' THEN 12 END AS months,
                 anchor AT TIME ZONE 'UTC' AS a, after AT TIME ZONE 'UTC' AS t) p,
        -- Whole intervals from the anchor to the month of `after`: that many, or one more,
        -- is the first end after it.
        LATERAL (SELECT GREATEST(0, ((extract(year FROM p.t) - extract(year FROM p.a)) * 12
            + extract(month FROM p.t) - extract(month FROM p.a))::integer / p.months) AS n) k,
        LATERAL (SELECT (p.a + (k.n + i) * p.months * interval '1 month') AT TIME ZONE 'UTC' AS period_end
            FROM generate_series(0, 1) i) e
    WHERE e.period_end > after
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION next_period_end(timestamptz, text, timestamptz);
-- NOT VALID: renewal and expiry rows stay (the ledger is append-only) and still add up.
ALTER TABLE ledger DROP CONSTRAINT ledger_kind_check,
    ADD CONSTRAINT ledger_kind_check CHECK (kind IN ('grant', 'debit', 'hold', 'release')) NOT VALID;
ALTER TABLE holds DROP COLUMN included_period;
DROP INDEX accounts_period_end;
ALTER TABLE accounts DROP CONSTRAINT accounts_plan_period,
    DROP COLUMN period_number, DROP COLUMN period_anchor, DROP COLUMN included_per_period;
