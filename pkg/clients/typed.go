package clients

import "google.golang.org/grpc"

// Client is what every typed client (pkg/clients/<service>) is made of: its connection and
// the service's generated stub. A typed client embeds it, so its Conn and Close come with it,
// and its methods call through Stub under Call.
type Client[S any] struct {
	conn *Conn
	// Stub is the service's generated client over the connection.
	Stub S
}

// NewClient is the typed client's part over conn, calling through the stub newStub (the
// service's generated New<Service>Client) makes of it.
func NewClient[S any](conn *Conn, newStub func(grpc.ClientConnInterface) S) Client[S] {
	return Client[S]{conn: conn, Stub: newStub(conn.ClientConn())}
}

// Conn is the client's connection.
func (c Client[S]) Conn() *Conn { return c.conn }

// Close closes the connection.
func (c Client[S]) Close() error { return c.conn.Close() }
