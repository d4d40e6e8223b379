-- +goose Up
-- One row per poll. Questions are one jsonb array (read and replaced whole: a poll is created
-- and updated as a whole, and a paused poll's participants continue with the updated
-- questions, matched by questionNumber). Counters are kept as participants move.
CREATE TABLE polls (
    id                        uuid PRIMARY KEY,
    organization_id           uuid NOT NULL,
    name                      text NOT NULL,
    status                    text NOT NULL CHECK (status IN ('draft', 'scheduled', 'active', 'paused', 'completed')),
    introductory_text         text NOT NULL DEFAULT '',
    outro_text                text NOT NULL DEFAULT '',
    intro_media_url           text,
    outro_media_url           text,
    -- [{questionNumber, text, type, options: [{code, label}], responseCode, branchingLogic}]
    questions                 jsonb NOT NULL,
    completion_target_enabled boolean NOT NULL DEFAULT false,
    completion_target         integer CHECK (completion_target > 0),
    max_reasks                integer NOT NULL DEFAULT 1 CHECK (max_reasks BETWEEN 0 AND 5),
    participant_timeout_hours integer NOT NULL DEFAULT 72 CHECK (participant_timeout_hours BETWEEN 1 AND 720),
    timezone                  text,
    scheduled_for             timestamptz,
    -- The audience of the start: a segment or {"tags": [...], "tagsLogic": "OR"|"AND"}.
    segment_id                uuid,
    contact_filter            jsonb,
    -- The number the poll sends from, fixed at the start (the organization's default).
    from_phone_number_id      uuid,
    -- Each start (immediate or scheduled) gets a number, so that a start job of an earlier one
    -- does nothing.
    run                       integer NOT NULL DEFAULT 0,
    -- Start progress: the audience is stored as participants before the hold is placed.
    audience_resolved         boolean NOT NULL DEFAULT false,
    -- Credits held (the hold's id is the poll's id); 0 when none was placed.
    held_credits              integer NOT NULL DEFAULT 0 CHECK (held_credits >= 0),
    -- The audience is stored and the hold placed: participants may begin (a contact freed by
    -- another poll begins here only then).
    sending                   boolean NOT NULL DEFAULT false,
    -- The zone its questions respect quiet hours in, fixed at the start: its timezone, else
    -- the organization's.
    quiet_zone                text NOT NULL DEFAULT '',
    participant_count         integer NOT NULL DEFAULT 0 CHECK (participant_count >= 0),
    completed_count           integer NOT NULL DEFAULT 0 CHECK (completed_count >= 0),
    failure_reason            text,
    created_at                timestamptz NOT NULL,
    updated_at                timestamptz NOT NULL,
    started_at                timestamptz,
    completed_at              timestamptz
);
CREATE INDEX polls_org_newest ON polls (organization_id, created_at DESC, id DESC);

-- One row per (poll, contact). step numbers what the participant is sent: each send (intro and
-- first question, a question, a re-ask, the outro) is one step, its messages keyed
-- "poll:<poll>:<contact>:<step>:<part>" in messaging, and sent_step is the last step handed to
-- messaging: an answer counts only once its question went out (sent_step = step), and a step
-- job finding sent_step < step sends it (after a pause, a restart, a lost job).
CREATE TABLE participants (
    id                      uuid PRIMARY KEY,
    poll_id                 uuid NOT NULL REFERENCES polls (id) ON DELETE CASCADE,
    organization_id         uuid NOT NULL,
    contact_id              uuid NOT NULL,
    phone                   text NOT NULL,
    first_name              text NOT NULL DEFAULT '',
    last_name               text NOT NULL DEFAULT '',
    -- The contact's merge data as contacts' audience gave it (protojson AudienceMember).
    member                  jsonb NOT NULL,
    recipient_timezone      text NOT NULL DEFAULT '',
    -- Credits of the intro and the costliest question path, rendered for this contact: the
    -- poll's hold is their sum.
    estimate                integer NOT NULL DEFAULT 0 CHECK (estimate >= 0),
    status                  text NOT NULL DEFAULT 'not_started' CHECK (status IN ('not_started', 'in_progress', 'completed', 'terminated')),
    termination_reason      text,
    current_question        integer NOT NULL DEFAULT 0,
    -- What step sends: intro (intro + current question), question, reask, outro.
    pending                 text CHECK (pending IN ('intro', 'question', 'reask', 'outro')),
    step                    integer NOT NULL DEFAULT 0,
    sent_step               integer NOT NULL DEFAULT 0,
    reasks                  integer NOT NULL DEFAULT 0,
    response_count          integer NOT NULL DEFAULT 0,
    started_at              timestamptz,
    completed_at            timestamptz,
    last_response_at        timestamptz,
    -- When the participant was last sent a step or answered: the silence timeout runs from it.
    last_activity_at        timestamptz,
    UNIQUE (poll_id, contact_id)
);
-- One poll at a time per contact: at most one participation in progress in the organization.
CREATE UNIQUE INDEX participants_one_in_progress ON participants (organization_id, contact_id) WHERE status = 'in_progress';
CREATE INDEX participants_waiting ON participants (organization_id, contact_id) WHERE status = 'not_started';
CREATE INDEX participants_poll ON participants (poll_id, status, id);
CREATE INDEX participants_silent ON participants (last_activity_at) WHERE status = 'in_progress';

-- One answer per (participant, question); message_id is the inbound message it came from.
CREATE TABLE responses (
    participant_id  uuid NOT NULL REFERENCES participants (id) ON DELETE CASCADE,
    poll_id         uuid NOT NULL,
    organization_id uuid NOT NULL,
    question_number integer NOT NULL,
    response_code   text NOT NULL,
    answer          text NOT NULL,
    option_code     text NOT NULL DEFAULT '',
    message_id      uuid,
    received_at     timestamptz NOT NULL,
    PRIMARY KEY (participant_id, question_number)
);
CREATE INDEX responses_poll ON responses (poll_id, response_code);

-- Inbound messages already read as a poll reply: an inbound whose event comes again (an outbox
-- replayed under a new event id) is not read a second time as the answer to the next question.
CREATE TABLE handled_inbound (
    organization_id uuid NOT NULL,
    message_id      uuid NOT NULL,
    handled_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (organization_id, message_id)
);

-- +goose Down
DROP TABLE handled_inbound;
DROP TABLE responses;
DROP TABLE participants;
DROP TABLE polls;
