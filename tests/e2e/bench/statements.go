package main

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"
)

// statements reads pg_stat_statements of one database, where the server preloads it
// (shared_preload_libraries); on a server that does not, it prints nothing.
type statements struct {
	conn *pgx.Conn
	db   string
}

// newStatements resets the database's statement figures, so print shows what ran after.
func newStatements(ctx context.Context, db string) *statements {
	dsn, err := ensureDatabase(ctx, db, false)
	if err != nil {
		return &statements{}
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return &statements{}
	}
	s := &statements{conn: conn, db: db}
	if _, err := conn.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pg_stat_statements`); err != nil {
		s.close()
		return &statements{}
	}
	if _, err := conn.Exec(ctx, `SELECT pg_stat_statements_reset(0, (SELECT oid FROM pg_database WHERE datname = $1), 0)`, db); err != nil {
		s.close()
		return &statements{}
	}
	return s
}

var spaces = regexp.MustCompile(`\s+`)

// print lists the statements that took the most time since the reset, per unit of work, with
// the shared buffers each touched (hit or read): unlike time, a count of buffers does not move
// with the machine's load, so it shows a statement whose work grows with the run.
func (s *statements) print(ctx context.Context, units int) {
	if s.conn == nil {
		return
	}
	const byDB = `WHERE dbid = (SELECT oid FROM pg_database WHERE datname = $1)`
	var all, wal int64
	if err := s.conn.QueryRow(ctx, `SELECT coalesce(sum(shared_blks_hit + shared_blks_read), 0)::bigint,
		coalesce(sum(wal_bytes), 0)::bigint FROM pg_stat_statements `+byDB, s.db).Scan(&all, &wal); err != nil {
		fmt.Println("  pg_stat_statements:", err)
		return
	}
	fmt.Printf("  every statement, per unit                 %.1f shared buffers, %.1f kB of WAL\n",
		float64(all)/float64(units), float64(wal)/1024/float64(units))
	rows, err := s.conn.Query(ctx, `SELECT calls, total_exec_time, shared_blks_hit + shared_blks_read, query
		FROM pg_stat_statements `+byDB+` ORDER BY total_exec_time DESC LIMIT 15`, s.db)
	if err != nil {
		fmt.Println("  pg_stat_statements:", err)
		return
	}
	defer rows.Close()
	fmt.Printf("  statements by time (pg_stat_statements): %8s %10s %12s %9s  %s\n", "calls", "total ms", "µs per unit", "buf/unit", "query")
	for rows.Next() {
		var calls, blocks int64
		var total float64
		var q string
		if err := rows.Scan(&calls, &total, &blocks, &q); err != nil {
			return
		}
		q = strings.TrimSpace(spaces.ReplaceAllString(q, " "))
		fmt.Printf("  %49d %10.0f %12.1f %9.2f  %.100s\n", calls, total, total*1000/float64(units), float64(blocks)/float64(units), q)
	}
}

func (s *statements) close() {
	if s.conn != nil {
		_ = s.conn.Close(context.Background())
	}
}
