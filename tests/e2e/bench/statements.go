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

// print lists the statements that took the most time since the reset, per unit of work.
func (s *statements) print(ctx context.Context, units int) {
	if s.conn == nil {
		return
	}
	rows, err := s.conn.Query(ctx, `SELECT calls, total_exec_time, rows, query FROM pg_stat_statements
		WHERE dbid = (SELECT oid FROM pg_database WHERE datname = $1) ORDER BY total_exec_time DESC LIMIT 15`, s.db)
	if err != nil {
		fmt.Println("  pg_stat_statements:", err)
		return
	}
	defer rows.Close()
	fmt.Printf("  statements by time (pg_stat_statements): %8s %10s %12s  %s\n", "calls", "total ms", "µs per unit", "query")
	for rows.Next() {
		var calls, n int64
		var total float64
		var q string
		if err := rows.Scan(&calls, &total, &n, &q); err != nil {
			return
		}
		q = strings.TrimSpace(spaces.ReplaceAllString(q, " "))
		fmt.Printf("  %49d %10.0f %12.1f  %.110s\n", calls, total, total*1000/float64(units), q)
	}
}

func (s *statements) close() {
	if s.conn != nil {
		_ = s.conn.Close(context.Background())
	}
}
