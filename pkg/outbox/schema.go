package outbox

// OutboxDDL creates the outbox table a producer's migrations must contain, in its own schema.
// The partial index keeps the relay's search for unpublished rows cheap however many
// published rows are retained.
const OutboxDDL = `CREATE TABLE outbox (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id        uuid NOT NULL UNIQUE,
    event_type      text NOT NULL,
    organization_id uuid NOT NULL,
    payload         bytea NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    published_at    timestamptz
);
CREATE INDEX outbox_unpublished ON outbox (id) WHERE published_at IS NULL;
`

// ProcessedDDL creates the table a consumer's migrations must contain, in its own schema.
// Column consumer holds the consumer group name, so every instance of a group shares one
// record of what it has handled.
const ProcessedDDL = `CREATE TABLE processed_events (
    consumer     text NOT NULL,
    event_id     uuid NOT NULL,
    processed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (consumer, event_id)
);
`
