/* myurl.h: MySQL and MariaDB database URLs (SPEC §4) in the spellings Zeus's SQLAlchemy
 * setups use, turned into what mysql_real_connect and mysql_options take, and the same
 * URLs with their passwords masked for messages. Pure: no libmariadb, no network, no
 * allocation; bounded and safe on any bytes (a fuzz target calls it). */
#ifndef ZBSO_STORE_MYURL_H
#define ZBSO_STORE_MYURL_H

#include <stddef.h>

#include "store/dburl.h"
#include "util/err.h"

#define MYURL_URL_MAX DBURL_URL_MAX     /* bytes of a URL, without the NUL */
#define MYURL_CRED_MAX DBURL_CRED_MAX   /* bytes of a user or password given apart */
#define MYURL_TEXT_MAX (MYURL_URL_MAX + 2 * (MYURL_CRED_MAX + 1) + 16)

/* ssl-mode, as the mysql command-line client spells it (case-insensitive in a URL). */
typedef enum myurl_ssl {
    MYURL_SSL_DEFAULT,          /* none given: libmariadb's default */
    MYURL_SSL_DISABLED,
    MYURL_SSL_PREFERRED,
    MYURL_SSL_REQUIRED,
    MYURL_SSL_VERIFY_CA,
    MYURL_SSL_VERIFY_IDENTITY,
} myurl_ssl;

/* A parsed URL. The strings point into text (NUL-terminated) or are NULL when the URL
 * gave none; the struct points into itself, so it must not be copied by value; it owns
 * nothing to free. */
typedef struct myurl {
    const char *user;          /* NULL: none (the server then sees the login name) */
    const char *password;      /* NULL: none */
    const char *host;          /* NULL: localhost; an IPv6 address without brackets */
    unsigned port;             /* 0: the default, 3306 */
    const char *database;      /* never NULL: a URL without one is refused */
    const char *unix_socket;   /* ?unix_socket=/path; NULL: none */
    const char *charset;       /* ?charset=; never NULL, default "utf8mb4" */
    myurl_ssl ssl_mode;        /* ?ssl-mode= (also ssl_mode=) */
    const char *ssl_ca;        /* ?ssl_ca= (also ssl-ca=); NULL: none */
    const char *ssl_cert;      /* ?ssl_cert= */
    const char *ssl_key;       /* ?ssl_key= */
    unsigned connect_timeout;  /* ?connect_timeout= seconds, 1..3600; 0: none given */
    char masked[MYURL_URL_MAX + 1];   /* the URL as dburl_mask writes it (one rule) */
    char text[MYURL_TEXT_MAX];        /* storage of the strings */
    size_t text_len;                  /* bytes of text in use */
} myurl;

/* Parses SCHEME://[user[:password]@][host][:port]/database[?key=value&...] for the
 * schemes mysql, mysql+asyncmy, mysql+aiomysql, mysql+pymysql, mysql+mysqldb,
 * mysql+mysqlconnector, mariadb, mariadb+mariadbconnector. user, password, host, database
 * and query values are percent-decoded ('+' stays '+'); a host in brackets is an IPv6
 * address. Query keys: charset, unix_socket, ssl-mode / ssl_mode, ssl_ca / ssl-ca,
 * ssl_cert / ssl-cert, ssl_key / ssl-key, connect_timeout; any other key is refused
 * naming it. A later key replaces an earlier one. user / password (may be NULL or "")
 * fill the URL's user and password when it has none (ZEUS_BSO_DB_USER /
 * ZEUS_BSO_DB_PASSWORD). Refused: another scheme, a URL longer than MYURL_URL_MAX, no
 * database, a port outside 1..65535, a NUL (%00) in any part, bad percent escapes, a
 * charset that is not letters and digits. Returns 0 with *out filled, or ZBSO_EINVAL with
 * err naming the URL (password masked) and what is wrong with it; *out is then
 * unusable. url may hold any bytes. */
int myurl_parse(const char *url, const char *user, const char *password, myurl *out,
                zbso_err *err);

/* The canonical name of a ssl-mode ("REQUIRED", ...; "" for MYURL_SSL_DEFAULT). */
const char *myurl_ssl_name(myurl_ssl mode);

#endif
