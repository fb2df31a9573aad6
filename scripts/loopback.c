/* The loopback TCP ceiling on this machine, for the network scenarios of
 * `podium bench` (docs/BENCHMARKS.md): what two threads of one
 * process get from the kernel alone, with nothing parsed or built.
 *
 *   cc -O2 -pthread -o /tmp/loopback scripts/loopback.c
 *   /tmp/loopback rtt  REQ_BYTES RESP_BYTES COUNT
 *       one request at a time (as rank10m's page reads): round-trip
 *       mean, p50, p99 in microseconds
 *   /tmp/loopback bulk TOTAL_BYTES WRITE_BYTES SNDBUF RCVBUF SECONDS
 *       the server writes TOTAL_BYTES in WRITE_BYTES writes, the client
 *       reads them into one reused buffer, repeated for SECONDS (as
 *       rpc-payload's sync mode): MB/s (10^6 bytes); a buffer size of 0
 *       keeps the kernel's default (autotuning)
 *   /tmp/loopback fanout SOCKETS BYTES RATE COUNT
 *       COUNT writes of BYTES, each to one of SOCKETS connections chosen
 *       at random, RATE a second, while another thread reads them all
 *       through epoll (as live events to SSE subscribers that each get
 *       one now and then): the writing thread's CPU time per write, in
 *       microseconds, which on loopback includes the receiving side's
 *       kernel work
 *
 * Both sockets have TCP_NODELAY, as podium's and its client's do.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static long a1, a2, a3, a4, a5;
static int listener;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void die(const char *what) {
    perror(what);
    exit(1);
}

static void setup(int fd, long snd, long rcv) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (snd > 0) {
        int v = (int)snd;
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof v);
    }
    if (rcv > 0) {
        int v = (int)rcv;
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof v);
    }
}

static void read_full(int fd, char *buf, long n) {
    while (n > 0) {
        ssize_t r = read(fd, buf, n);
        if (r <= 0)
            die("read");
        buf += r;
        n -= r;
    }
}

static void write_full(int fd, const char *buf, long n) {
    while (n > 0) {
        ssize_t w = write(fd, buf, n);
        if (w <= 0)
            die("write");
        buf += w;
        n -= w;
    }
}

/* rtt: a1 = request bytes, a2 = response bytes. bulk: a1 = total, a2 =
 * write size, a3/a4 = buffers. The client asks with one byte per bulk
 * transfer, so each transfer is a request and its whole answer. */
static void *rtt_server(void *arg) {
    (void)arg;
    int fd = accept(listener, NULL, NULL);
    if (fd < 0)
        die("accept");
    setup(fd, 0, 0);
    char *req = malloc(a1), *resp = calloc(1, a2);
    for (;;) {
        ssize_t r = read(fd, req, a1);
        if (r <= 0)
            break;
        if (r < a1)
            read_full(fd, req + r, a1 - r);
        write_full(fd, resp, a2);
    }
    close(fd);
    return NULL;
}

static void *bulk_server(void *arg) {
    (void)arg;
    int fd = accept(listener, NULL, NULL);
    if (fd < 0)
        die("accept");
    setup(fd, a3, a4);
    char *chunk = calloc(1, a2);
    char go;
    while (read(fd, &go, 1) == 1) {
        for (long left = a1; left > 0; left -= a2)
            write_full(fd, chunk, left < a2 ? left : a2);
    }
    close(fd);
    return NULL;
}

static double cpu_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void *fanout_reader(void *arg) {
    int ep = *(int *)arg;
    struct epoll_event ev[256];
    char buf[16384];
    for (;;) {
        int n = epoll_wait(ep, ev, 256, -1);
        for (int i = 0; i < n; i++)
            if (read(ev[i].data.fd, buf, sizeof buf) < 0)
                die("read");
    }
    return NULL;
}

/* fanout: a1 = sockets, a2 = bytes a write, a3 = writes a second, a4 =
 * writes. */
static int fanout(const struct sockaddr_in *addr) {
    int *out = malloc(sizeof(int) * a1);
    int ep = epoll_create1(0);
    for (long i = 0; i < a1; i++) {
        int c = socket(AF_INET, SOCK_STREAM, 0);
        if (connect(c, (const struct sockaddr *)addr, sizeof *addr))
            die("connect");
        int s = accept(listener, NULL, NULL);
        if (s < 0)
            die("accept");
        setup(c, 0, 0);
        setup(s, 0, 0);
        out[i] = s;
        struct epoll_event e = {.events = EPOLLIN, .data.fd = c};
        epoll_ctl(ep, EPOLL_CTL_ADD, c, &e);
    }
    pthread_t t;
    pthread_create(&t, NULL, fanout_reader, &ep);
    char *msg = calloc(1, a2);
    unsigned r = 1;
    double cpu = 0, t0 = now();
    for (long k = 0; k < a4; k++) {
        double due = t0 + (double)k / a3;
        while (now() < due) {
            struct timespec nap = {0, 20000};
            nanosleep(&nap, NULL);
        }
        r = r * 1103515245 + 12345;
        double c0 = cpu_now();
        write_full(out[(r >> 8) % a1], msg, a2);
        cpu += cpu_now() - c0;
    }
    printf("fanout %ld B to %ld sockets at %ld/s, %ld writes in %.1f s: %.2f us of CPU a write\n",
           a2, a1, a3, a4, now() - t0, cpu / a4 * 1e6);
    return 0;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: see the comment at the top of loopback.c\n");
        return 2;
    }
    int bulk = strcmp(argv[1], "bulk") == 0;
    int fan = strcmp(argv[1], "fanout") == 0;
    a1 = atol(argv[2]);
    a2 = atol(argv[3]);
    a3 = atol(argv[4]);
    if (bulk || fan) {
        if (argc < (bulk ? 7 : 6))
            return 2;
        a4 = atol(argv[5]);
        if (bulk)
            a5 = atol(argv[6]);
    }
    listener = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = 0};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (bind(listener, (struct sockaddr *)&addr, sizeof addr) || listen(listener, 128) ||
        getsockname(listener, (struct sockaddr *)&addr, &len))
        die("listen");
    if (fan)
        return fanout(&addr);
    pthread_t t;
    pthread_create(&t, NULL, bulk ? bulk_server : rtt_server, NULL);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr))
        die("connect");
    if (!bulk) {
        long count = a3;
        setup(fd, 0, 0);
        char *req = calloc(1, a1), *resp = malloc(a2);
        double *lat = malloc(sizeof(double) * count), sum = 0;
        for (long i = 0; i < count; i++) {
            double t0 = now();
            write_full(fd, req, a1);
            read_full(fd, resp, a2);
            lat[i] = (now() - t0) * 1e6;
            sum += lat[i];
        }
        qsort(lat, count, sizeof(double), cmp);
        printf("rtt %ld B -> %ld B, %ld round trips: mean %.1f us, p50 %.1f us, p99 %.1f us\n",
               a1, a2, count, sum / count, lat[count / 2], lat[count * 99 / 100]);
    } else {
        setup(fd, a3, a4);
        char *buf = malloc(a2);
        long transfers = 0;
        double t0 = now(), el;
        do {
            char go = 1;
            write_full(fd, &go, 1);
            for (long left = a1; left > 0;) {
                ssize_t r = read(fd, buf, left < a2 ? left : a2);
                if (r <= 0)
                    die("read");
                left -= r;
            }
            transfers++;
        } while ((el = now() - t0) < a5);
        printf("bulk %ld B in %ld B writes/reads, sndbuf %ld rcvbuf %ld: %ld transfers, %.0f MB/s\n",
               a1, a2, a3, a4, transfers, a1 * (double)transfers / el / 1e6);
    }
    close(fd);
    pthread_join(t, NULL);
    return 0;
}
