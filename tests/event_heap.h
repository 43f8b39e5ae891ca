/* event_heap.h -- the event queue of the tests' discrete-event pipeline
 * simulators (test_schedule_sim.c for 1F1B, test_schedule_vp.c for the
 * interleaved schedule): a binary min-heap on time, ties in insertion
 * order, so a simulation is deterministic and independent of the code
 * under test.  The storage is the caller's (a fixed array). */
#ifndef ARACHNE_TEST_EVENT_HEAP_H
#define ARACHNE_TEST_EVENT_HEAP_H

typedef struct sim_ev { double t; int kind, s, x; long seq; } sim_ev;

typedef struct sim_heap {
    sim_ev *ev;   /* storage, capacity fixed by the caller */
    int n;        /* events queued */
    long seq;     /* insertion counter (tie order) */
} sim_heap;

static int sim_ev_less(const sim_ev *a, const sim_ev *b)
{
    return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static void sim_heap_push(sim_heap *h, double t, int kind, int s, int x)
{
    int i = h->n++;
    sim_ev e;
    e.t = t; e.kind = kind; e.s = s; e.x = x; e.seq = h->seq++;
    while (i > 0 && sim_ev_less(&e, &h->ev[(i - 1) / 2])) { h->ev[i] = h->ev[(i - 1) / 2]; i = (i - 1) / 2; }
    h->ev[i] = e;
}

static sim_ev sim_heap_pop(sim_heap *h)
{
    sim_ev top = h->ev[0], last = h->ev[--h->n];
    int i = 0;
    for (;;) {
        int k = 2 * i + 1;
        if (k >= h->n) break;
        if (k + 1 < h->n && sim_ev_less(&h->ev[k + 1], &h->ev[k])) k++;
        if (!sim_ev_less(&h->ev[k], &last)) break;
        h->ev[i] = h->ev[k];
        i = k;
    }
    h->ev[i] = last;
    return top;
}

#endif
