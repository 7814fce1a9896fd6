/* telemetry2tcp: a litex_sim module that streams the SoC's telemetry bytes to a TCP client.
 *
 * Pads (group "telemetry"): valid, data[7:0] from the SoC, ready to it. The module takes a byte in
 * every cycle in which valid was high and it had driven ready high, buffers up to its buffer size
 * and sends them in blocks (non-blocking, so a slow reader never stalls the simulation). While no
 * client is connected, or the buffer is full, ready is low: the SoC's telemetry block then drops
 * frames and counts them; nothing is lost silently here. One client at a time; a new connection
 * replaces the old one. Arguments (sim_config.js): {"port": N, "buffer": bytes (optional, default
 * 1 MiB; tests make it small, with the socket's send buffer, to reach the full-buffer case quickly)}. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <event2/listener.h>
#include <event2/util.h>
#include <event2/event.h>
#include <json-c/json.h>

#include "error.h"
#include "modules.h"

#define BUF_DEFAULT (1 << 20)
#define FLUSH_BYTES 4096          /* send when this much is waiting... */
#define FLUSH_TICKS 20000         /* ...or this many cycles after the oldest byte */

struct session_s {
	char *valid, *ready, *data, *sys_clk;
	char ready_q;                 /* ready as the SoC saw it in the cycle that just ended */
	int fd;
	unsigned char *buf;
	size_t size, head, len;       /* ring buffer */
	uint64_t waiting_ticks;
	uint64_t sent, connections;
	clk_edge_state_t edge;
};

static struct event_base *base;

static int get_args(char *args, int *port, size_t *size)
{
	json_object *obj = json_tokener_parse(args ? args : ""), *val;
	if (!obj || !json_object_object_get_ex(obj, "port", &val)) {
		fprintf(stderr, "[telemetry2tcp] missing \"port\" argument\n");
		return RC_JSERROR;
	}
	*port = json_object_get_int(val);
	*size = BUF_DEFAULT;
	if (json_object_object_get_ex(obj, "buffer", &val) && json_object_get_int(val) > 0)
		*size = (size_t)json_object_get_int(val);
	json_object_put(obj);
	return *port > 0 && *port < 65536 ? RC_OK : RC_INVARG;
}

static void pad(struct pad_s *pads, const char *name, char **sig)
{
	for (int i = 0; pads[i].name; i++)
		if (!strcmp(pads[i].name, name))
			*sig = (char *)pads[i].signal;
}

static void drop_client(struct session_s *s)
{
	if (s->fd > 0)
		close(s->fd);
	s->fd = 0;
	s->head = s->len = 0;         /* bytes for a reader that is gone */
	s->waiting_ticks = 0;
}

static void flush(struct session_s *s)
{
	while (s->fd > 0 && s->len) {
		size_t chunk = s->len;
		if (s->head + chunk > s->size)
			chunk = s->size - s->head;
		ssize_t n = send(s->fd, s->buf + s->head, chunk, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
				return;
			fprintf(stderr, "[telemetry2tcp] client gone (%s)\n", strerror(errno));
			drop_client(s);
			return;
		}
		s->head = (s->head + n) % s->size;
		s->len -= n;
		s->sent += n;
	}
	s->waiting_ticks = 0;
}

static void accept_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *a, int len, void *ctx)
{
	struct session_s *s = ctx;
	if (s->fd > 0)
		drop_client(s);
	s->fd = fd;
	s->connections++;
	if (s->size < BUF_DEFAULT) {
		/* A small buffer asked for (tests of a slow reader): the socket's own buffer small too. */
		int sndbuf = (int)s->size;
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	}
	printf("[telemetry2tcp] client connected\n");
}

static int t_start(void *b)
{
	base = (struct event_base *)b;
	return RC_OK;
}

static int t_new(void **sess, char *args)
{
	struct session_s *s;
	struct sockaddr_in sin;
	size_t size;
	int port, ret = get_args(args, &port, &size);
	if (ret != RC_OK)
		return ret;
	s = calloc(1, sizeof(*s));
	if (!s || !(s->buf = malloc(size)))
		return RC_NOENMEM;
	s->size = size;
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons(port);
	if (!evconnlistener_new_bind(base, accept_cb, s, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE, -1,
	                             (struct sockaddr *)&sin, sizeof(sin))) {
		fprintf(stderr, "[telemetry2tcp] cannot listen on port %d\n", port);
		return RC_ERROR;
	}
	printf("[telemetry2tcp] telemetry on tcp://127.0.0.1:%d\n", port);
	*sess = s;
	return RC_OK;
}

static int t_add_pads(void *sess, struct pad_list_s *plist)
{
	struct session_s *s = sess;
	if (!sess || !plist)
		return RC_INVARG;
	if (!strcmp(plist->name, "telemetry")) {
		pad(plist->pads, "valid", &s->valid);
		pad(plist->pads, "ready", &s->ready);
		pad(plist->pads, "data", &s->data);
	}
	if (!strcmp(plist->name, "sys_clk"))
		pad(plist->pads, "sys_clk", &s->sys_clk);
	return RC_OK;
}

static int t_tick(void *sess, uint64_t time_ps)
{
	struct session_s *s = sess;
	if (!clk_pos_edge(&s->edge, *s->sys_clk))
		return RC_OK;
	if (*s->valid && s->ready_q) {
		s->buf[(s->head + s->len) % s->size] = (unsigned char)*s->data;
		s->len++;
	}
	if (s->len && ++s->waiting_ticks >= FLUSH_TICKS)
		flush(s);
	else if (s->len >= FLUSH_BYTES || s->len >= s->size / 2)
		flush(s);
	s->ready_q = s->fd > 0 && s->len < s->size;
	*s->ready = s->ready_q;
	return RC_OK;
}

static int t_close(void *sess)
{
	struct session_s *s = sess;
	for (int i = 0; i < 1000 && s->fd > 0 && s->len; i++) {
		flush(s);
		if (s->len)
			usleep(1000);
	}
	printf("[telemetry2tcp] %llu bytes sent, %llu connection(s)\n", (unsigned long long)s->sent,
	       (unsigned long long)s->connections);
	drop_client(s);
	free(s->buf);
	free(s);
	return RC_OK;
}

static struct ext_module_s ext_mod = {
	"telemetry2tcp", t_start, t_new, t_add_pads, t_close, t_tick
};

int litex_sim_ext_module_init(int (*register_module)(struct ext_module_s *))
{
	return register_module(&ext_mod);
}
