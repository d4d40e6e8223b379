-- +goose Up
-- Sign-up keywords (issue 30): a text that is one of its organization's keywords opts the
-- sender in with the keyword's tag and is answered with the confirmation. The keyword is
-- stored upper-case, letters and digits only, so the unique key is case-insensitive and an
-- inbound message, folded the same way, finds its keyword by one probe of that key.
CREATE TABLE keywords (
    organization_id uuid NOT NULL,
    id              uuid NOT NULL,
    keyword         text NOT NULL CHECK (keyword ~ '^[A-Z0-9]{1,20}$'),
    tag             text NOT NULL,
    confirmation    text NOT NULL,
    frequency       text NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (organization_id, id),
    CONSTRAINT keywords_org_keyword UNIQUE (organization_id, keyword)
);

-- +goose Down
DROP TABLE keywords;
