/*
 * floe: obs_impl.h -- what the parts of the obs module share: struct obs,
 * the rollback log's counts and the events index. obs.c serves and keeps
 * them; obs_page.c renders the status page. Not for other modules.
 */
#ifndef FLOE_PROXY_OBS_IMPL_H
#define FLOE_PROXY_OBS_IMPL_H

#include <sys/types.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct evbuffer;
struct floe;
struct server;

/* The triggers the rollback counter is labelled with; the rest: "other". */
#define OBS_NTRIGGERS 6
extern const char *const obs_triggers[OBS_NTRIGGERS];

/* Rollback log lines of one wave, per trigger (obs_triggers' order). */
struct obs_count {
	uint32_t wave;
	uint64_t n[OBS_NTRIGGERS];
};

/* One wave's timeline: the sequences of its events, oldest first. */
struct obs_wave {
	uint32_t n;
	uint64_t *seqs;
	size_t nseqs;
	size_t cap;
};

struct obs {
	struct floe *f;
	struct server *srv; /* NULL: no listener */
	/* The rollback log, read on as it grows. */
	off_t rlog_off;
	ino_t rlog_ino;
	struct obs_count *counts; /* sorted by wave */
	size_t ncounts;
	/* The events index: every event up to EV_SEQ, by wave. */
	uint64_t ev_seq;
	struct obs_wave *waves; /* sorted by n */
	size_t nwaves;
	uint64_t nevents; /* of every wave */
};

/* Read the rollback log and the events that are new. */
void obs_refresh(struct obs *);
/* The counts of wave N, or NULL. */
const struct obs_count *obs_count_get(const struct obs *, uint32_t n);
/* The timeline of wave N, or NULL. */
const struct obs_wave *obs_wave_get(const struct obs *, uint32_t n);
/* Is an event of TYPE part of a wave's timeline? */
bool obs_event_is_timeline(const char *type);

/*
 * obs_page.c: GET / with the query QUERY (after '?', may be empty) as
 * HTML into OUT.
 */
void obs_page_render(struct obs *, const char *query, struct evbuffer *out);

#endif
