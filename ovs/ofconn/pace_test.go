package ofconn

import (
	"context"
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// groupLink answers each group description request with the group asked
// for (one bucket, its ID the group's), and records when each came.
type groupLink struct {
	asked []uint32
	at    []time.Time
}

func (l *groupLink) Transact(context.Context, *Batch, func()) error {
	return errors.New("not a bundle link")
}
func (l *groupLink) Broken() bool { return false }
func (l *groupLink) Close()       {}

func (l *groupLink) Multipart(_ context.Context, _ uint16, body []byte, entry func([]byte) error) error {
	id := binary.BigEndian.Uint32(body)
	l.asked, l.at = append(l.asked, id), append(l.at, time.Now())
	return entry(groupDescBytes(id, []uint32{id}))
}

// A paced description asks for every ID in order, a chunk at a time,
// pausing between two chunks and never inside one; a context ended
// during a chunk stops it before the next.
func TestDescribeGroupsPaced(t *testing.T) {
	ids := []uint32{11, 12, 13, 14, 15, 16, 17}
	const pause = 30 * time.Millisecond
	l := &groupLink{}
	c := Over("test", func(context.Context) (Link, error) { return l, nil })
	got, err := c.DescribeGroups(context.Background(), ids, Paced{Chunk: 3, Pause: pause})
	if err != nil {
		t.Fatal(err)
	}
	var want []GroupInfo
	for _, id := range ids {
		want = append(want, GroupInfo{ID: id, BucketIDs: []uint32{id}})
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("groups (-want +got)\n%s", diff)
	}
	if diff := cmp.Diff(ids, l.asked); diff != "" {
		t.Errorf("requests (-want +got)\n%s", diff)
	}
	for _, i := range []int{3, 6} { // the first request of a chunk after the first
		if gap := l.at[i].Sub(l.at[i-1]); gap < pause {
			t.Errorf("request %d came %v after the one before it, want a pause of at least %v", i, gap, pause)
		}
	}

	l = &groupLink{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l2 := &cancelling{groupLink: l, after: 2, cancel: cancel}
	c = Over("test", func(context.Context) (Link, error) { return l2, nil })
	if _, err := c.DescribeGroups(ctx, ids, Paced{Chunk: 3, Pause: pause}); !errors.Is(err, context.Canceled) {
		t.Errorf("a description whose context ended: %v, want context.Canceled", err)
	}
	if diff := cmp.Diff(ids[:3], l.asked); diff != "" {
		t.Errorf("requests of a description whose context ended in its first chunk (-want +got)\n%s", diff)
	}
}

// cancelling is a groupLink that ends a context after some requests.
type cancelling struct {
	*groupLink
	after  int
	cancel context.CancelFunc
}

func (l *cancelling) Multipart(ctx context.Context, typ uint16, body []byte, entry func([]byte) error) error {
	err := l.groupLink.Multipart(ctx, typ, body, entry)
	if len(l.asked) == l.after {
		l.cancel()
	}
	return err
}
