-- +goose Up
-- Each organization's contact totals, split into stripes. With one row per organization
-- (00004) every write to an organization's contacts locked that row from its trigger until
-- commit, so concurrent creates of one organization (and their phone lookups' textability
-- updates) ran one at a time, each waiting for the previous one's commit. Now a write adds its
-- change to the stripe of its backend, so concurrent writes of one organization lock different
-- rows; a stripe may go negative (a contact counted in one stripe is deleted through another),
-- and only the sum of an organization's stripes means anything. contact_totals becomes a view
-- of those sums, with the columns the table had: readers are unchanged and stay exact, as each
-- stripe changes in the transaction of the write it counts. Triggers stay statement-level, so
-- a bulk write still adds to each organization's stripe once.
CREATE TABLE contact_total_stripes (
    organization_id uuid     NOT NULL,
    stripe          smallint NOT NULL,
    -- bigint: one stripe may count a contact's insert and another its deletion, so a stripe
    -- drifts with churn; only the sum is bounded by the table.
    total           bigint   NOT NULL DEFAULT 0,
    textable        bigint   NOT NULL DEFAULT 0,
    opted_out       bigint   NOT NULL DEFAULT 0,
    PRIMARY KEY (organization_id, stripe)
);

-- Writes to contacts wait (reads go on) while the totals move, so no write is counted twice or
-- lost between the old row and the stripes; the move copies one row per organization.
LOCK TABLE contacts IN SHARE ROW EXCLUSIVE MODE;

INSERT INTO contact_total_stripes (organization_id, stripe, total, textable, opted_out)
SELECT organization_id, 0, total, textable, opted_out FROM contact_totals;

DROP TABLE contact_totals;

-- A filter on organization_id is applied before the grouping, so reading one organization's
-- totals reads its stripes alone.
CREATE VIEW contact_totals AS
SELECT organization_id, sum(total)::integer AS total, sum(textable)::integer AS textable,
       sum(opted_out)::integer AS opted_out
FROM contact_total_stripes GROUP BY organization_id;

-- The stripe a write adds to: its backend's, out of more stripes than a service's pool has
-- connections, so concurrent writes of one organization meet on a stripe only when their
-- backends' pids fall on the same one. A statement locks its organizations' stripes in
-- organization order, as 00004 locked their rows.
-- +goose StatementBegin
CREATE FUNCTION contact_totals_stripe() RETURNS smallint LANGUAGE sql STABLE AS $$
    SELECT (pg_backend_pid() % 64)::smallint
$$;
-- +goose StatementEnd

-- The trigger functions keep their names (the triggers of 00004 call them) and their
-- search_path (see 00004). A deletion adds negative counts, as its stripe may not have counted
-- the row, and takes its stripes in organization order like the others (00004's took its rows
-- in any order, so two bulk deletions spanning the same organizations could deadlock).
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION contact_totals_insert() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO contact_total_stripes AS t (organization_id, stripe, total, textable, opted_out)
    SELECT organization_id, contact_totals_stripe(), count(*), count(*) FILTER (WHERE is_textable),
           count(*) FILTER (WHERE NOT is_opted_in)
    FROM new_rows GROUP BY organization_id ORDER BY organization_id
    ON CONFLICT (organization_id, stripe) DO UPDATE SET total = t.total + excluded.total,
        textable = t.textable + excluded.textable, opted_out = t.opted_out + excluded.opted_out;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION contact_totals_delete() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO contact_total_stripes AS t (organization_id, stripe, total, textable, opted_out)
    SELECT organization_id, contact_totals_stripe(), -count(*), -count(*) FILTER (WHERE is_textable),
           -count(*) FILTER (WHERE NOT is_opted_in)
    FROM old_rows GROUP BY organization_id ORDER BY organization_id
    ON CONFLICT (organization_id, stripe) DO UPDATE SET total = t.total + excluded.total,
        textable = t.textable + excluded.textable, opted_out = t.opted_out + excluded.opted_out;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION contact_totals_update() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO contact_total_stripes AS t (organization_id, stripe, total, textable, opted_out)
    SELECT organization_id, contact_totals_stripe(), sum(n), sum(textable), sum(opted_out) FROM (
        SELECT organization_id, 1 AS n, (is_textable IS TRUE)::int AS textable, (NOT is_opted_in)::int AS opted_out FROM new_rows
        UNION ALL
        SELECT organization_id, -1, -(is_textable IS TRUE)::int, -(NOT is_opted_in)::int FROM old_rows
    ) d
    GROUP BY organization_id
    HAVING sum(n) <> 0 OR sum(textable) <> 0 OR sum(opted_out) <> 0
    ORDER BY organization_id
    ON CONFLICT (organization_id, stripe) DO UPDATE SET total = t.total + excluded.total,
        textable = t.textable + excluded.textable, opted_out = t.opted_out + excluded.opted_out;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose Down
LOCK TABLE contacts IN SHARE ROW EXCLUSIVE MODE;

CREATE TABLE contact_totals_rows (
    organization_id uuid    PRIMARY KEY,
    total           integer NOT NULL DEFAULT 0,
    textable        integer NOT NULL DEFAULT 0,
    opted_out       integer NOT NULL DEFAULT 0
);
INSERT INTO contact_totals_rows (organization_id, total, textable, opted_out)
SELECT organization_id, total, textable, opted_out FROM contact_totals;
DROP VIEW contact_totals;
ALTER TABLE contact_totals_rows RENAME TO contact_totals;
ALTER INDEX contact_totals_rows_pkey RENAME TO contact_totals_pkey;

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION contact_totals_insert() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO contact_totals AS t (organization_id, total, textable, opted_out)
    SELECT organization_id, count(*), count(*) FILTER (WHERE is_textable), count(*) FILTER (WHERE NOT is_opted_in)
    FROM new_rows GROUP BY organization_id ORDER BY organization_id
    ON CONFLICT (organization_id) DO UPDATE SET total = t.total + excluded.total,
        textable = t.textable + excluded.textable, opted_out = t.opted_out + excluded.opted_out;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION contact_totals_delete() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    UPDATE contact_totals t SET total = t.total - d.n, textable = t.textable - d.textable, opted_out = t.opted_out - d.opted_out
    FROM (SELECT organization_id, count(*) AS n, count(*) FILTER (WHERE is_textable) AS textable,
                 count(*) FILTER (WHERE NOT is_opted_in) AS opted_out
          FROM old_rows GROUP BY organization_id) d
    WHERE t.organization_id = d.organization_id;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION contact_totals_update() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO contact_totals AS t (organization_id, total, textable, opted_out)
    SELECT organization_id, sum(n), sum(textable), sum(opted_out) FROM (
        SELECT organization_id, 1 AS n, (is_textable IS TRUE)::int AS textable, (NOT is_opted_in)::int AS opted_out FROM new_rows
        UNION ALL
        SELECT organization_id, -1, -(is_textable IS TRUE)::int, -(NOT is_opted_in)::int FROM old_rows
    ) d
    GROUP BY organization_id
    HAVING sum(n) <> 0 OR sum(textable) <> 0 OR sum(opted_out) <> 0
    ORDER BY organization_id
    ON CONFLICT (organization_id) DO UPDATE SET total = t.total + excluded.total,
        textable = t.textable + excluded.textable, opted_out = t.opted_out + excluded.opted_out;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

DROP FUNCTION contact_totals_stripe();
DROP TABLE contact_total_stripes;
