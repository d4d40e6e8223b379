-- +goose Up
-- Extensions live in public (on the search_path of every service) so each schema can use them.
CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA public;
CREATE EXTENSION IF NOT EXISTS btree_gin WITH SCHEMA public;

CREATE TABLE contacts (
    id              uuid NOT NULL,
    organization_id uuid NOT NULL,
    phone           text CHECK (phone ~ '^\+[1-9][0-9]{6,14}$'),
    email           text CHECK (email <> ''),
    first_name      text NOT NULL DEFAULT '',
    last_name       text NOT NULL DEFAULT '',
    address         text NOT NULL DEFAULT '',
    city            text NOT NULL DEFAULT '',
    state           text NOT NULL DEFAULT '',
    zip             text NOT NULL DEFAULT '',
    tags            text[] NOT NULL DEFAULT '{}',
    custom_fields   jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(custom_fields) = 'object'),
    -- NULL until the phone lookup completes.
    is_textable     boolean,
    is_opted_in     boolean NOT NULL DEFAULT true,
    opted_out_at    timestamptz,
    timezone        text NOT NULL DEFAULT '',
    is_starred      boolean NOT NULL DEFAULT false,
    is_archived     boolean NOT NULL DEFAULT false,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    -- What search matches: names, email and the phone's digits, lower-cased, so a number typed
    -- in any format is found by its digits and one trigram index serves every term.
    search_text     text NOT NULL GENERATED ALWAYS AS (lower(
        first_name || ' ' || last_name || ' ' || coalesce(email, '') || ' ' ||
        coalesce(regexp_replace(phone, '[^0-9]', '', 'g'), ''))) STORED,
    PRIMARY KEY (organization_id, id)
);

-- Merge keys: one contact per phone and per email (case-insensitive) in an organization.
CREATE UNIQUE INDEX contacts_org_phone_key ON contacts (organization_id, phone) WHERE phone IS NOT NULL;
CREATE UNIQUE INDEX contacts_org_email_key ON contacts (organization_id, lower(email)) WHERE email IS NOT NULL;

-- Keyset pagination for both sort orders: (sort value, id) after the organization.
CREATE INDEX contacts_org_updated ON contacts (organization_id, updated_at DESC, id DESC);
CREATE INDEX contacts_org_created ON contacts (organization_id, created_at DESC, id DESC);

-- Tag filters (&& for OR, @> for AND) and fuzzy search (ILIKE and <%), organization first.
CREATE INDEX contacts_org_tags ON contacts USING gin (organization_id, tags);
CREATE INDEX contacts_org_search ON contacts USING gin (organization_id, search_text gin_trgm_ops);

-- A segment is a saved contact filter, evaluated when used.
CREATE TABLE segments (
    id              uuid NOT NULL,
    organization_id uuid NOT NULL,
    name            text NOT NULL CHECK (name <> '' AND length(name) <= 200),
    filter          jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(filter) = 'object'),
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (organization_id, id)
);

CREATE UNIQUE INDEX segments_org_name_key ON segments (organization_id, lower(name));
CREATE INDEX segments_org_created ON segments (organization_id, created_at DESC, id DESC);

-- +goose Down
DROP TABLE segments;
DROP TABLE contacts;
