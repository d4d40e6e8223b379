-- +goose Up
CREATE TABLE organizations (
    id                  uuid PRIMARY KEY,
    name                text NOT NULL CHECK (name <> '' AND length(name) <= 200),
    timezone            text NOT NULL,
    sandbox             boolean NOT NULL DEFAULT false,
    short_link_base_url text NOT NULL DEFAULT '',
    created_at          timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE memberships (
    organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    user_subject    text NOT NULL CHECK (user_subject <> ''),
    access          text NOT NULL CHECK (access IN ('read', 'write', 'admin')),
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (organization_id, user_subject)
);

-- +goose Down
DROP TABLE memberships;
DROP TABLE organizations;
