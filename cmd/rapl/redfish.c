/*
 * rapl-read's source redfish: the machine's power at its supply, read
 * from a BMC's Redfish service over HTTPS, as zone platform (rapl-read(1),
 * The BMC sources).
 */
#include <curl/curl.h>
#include <err.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rapl.h"

extern const struct source redfish_source;

/* The most of a body kept: a Redfish power resource is a few kB. */
#define MAX_BODY_BYTES	(1024 * 1024)

static const char *ca_path, *chassis_id;
static int insecure;
static long connect_timeout_ms = 5000;

static CURL *curl;
static struct curl_slist *auth_headers;
static char session_uri[1024];		/* to DELETE at exit; "": none */
static char read_path[1024];		/* the resource read */
static enum { RES_ENVIRONMENT, RES_POWER, RES_SUPPLIES } resource;
static char supply_paths[16][512];	/* RES_SUPPLIES: each Metrics */
static size_t nsupplies;

struct answer {
	char *body;
	size_t len;
	int too_big;
	char token[512];
	char location[1024];
};

static size_t
take_body(char *data, size_t size, size_t n, void *arg)
{
	struct answer *a = arg;
	size_t bytes = size * n;

	if (a->len + bytes > MAX_BODY_BYTES) {
		a->too_big = 1;
		return 0;
	}
	a->body = kp_reallocarray(a->body, a->len + bytes + 1, 1);
	memcpy(a->body + a->len, data, bytes);
	a->len += bytes;
	a->body[a->len] = '\0';
	return bytes;
}

/* A header's value, its name matched without case, into out. */
static void
header_value(const char *line, size_t len, const char *name, char *out,
    size_t outlen)
{
	size_t nlen = strlen(name), vlen;

	if (len <= nlen || strncasecmp(line, name, nlen) != 0)
		return;
	line += nlen;
	len -= nlen;
	while (len > 0 && (*line == ' ' || *line == '\t'))
		line++, len--;
	while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == '\n'))
		len--;
	vlen = len < outlen - 1 ? len : outlen - 1;
	memcpy(out, line, vlen);
	out[vlen] = '\0';
}

static size_t
take_header(char *data, size_t size, size_t n, void *arg)
{
	struct answer *a = arg;

	header_value(data, size * n, "X-Auth-Token:", a->token,
	    sizeof(a->token));
	header_value(data, size * n, "Location:", a->location,
	    sizeof(a->location));
	return size * n;
}

/* A request aborts when the source closes: the thread waits on no BMC. */
static int
on_progress(void *arg, curl_off_t a, curl_off_t b, curl_off_t c,
    curl_off_t d)
{
	(void)arg, (void)a, (void)b, (void)c, (void)d;
	return bmc_quitting();
}

/*
 * One request to path on the BMC: its HTTP status, or -1 with why; the
 * body, if any, in a->body (the caller frees it).
 */
static long
request(const char *method, const char *path, const char *body,
    struct answer *a, char *why, size_t len)
{
	char url[2048];
	long status = -1;
	CURLcode rc;

	memset(a, 0, sizeof(*a));
	snprintf(url, sizeof(url), "%s%s", bmc_target, path);
	curl_easy_setopt(curl, CURLOPT_URL, url);
	curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(curl, CURLOPT_HTTPGET, body == NULL &&
	    strcmp(method, "GET") == 0 ? 1L : 0L);
	if (body == NULL && strcmp(method, "GET") == 0)
		curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, NULL);
	curl_easy_setopt(curl, CURLOPT_WRITEDATA, a);
	curl_easy_setopt(curl, CURLOPT_HEADERDATA, a);
	if ((rc = curl_easy_perform(curl)) != CURLE_OK) {
		if (a->too_big)
			snprintf(why, len, "%s: the answer is longer than "
			    "%d bytes", path, MAX_BODY_BYTES);
		else
			snprintf(why, len, "%s: %s", path,
			    curl_easy_strerror(rc));
		return rc == CURLE_PEER_FAILED_VERIFICATION ||
		    rc == CURLE_SSL_CONNECT_ERROR ||
		    rc == CURLE_SSL_CACERT_BADFILE ? -2 : -1;
	}
	curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
	if (status < 200 || status > 299)
		snprintf(why, len, "%s: HTTP status %ld", path, status);
	return status;
}

/*
 * GET path as JSON: 0 with *root (new), or the exit status that says why
 * not: 5 for a refused certificate or credentials, 4 for the rest.
 */
static int
get_json(const char *path, json_t **root, char *why, size_t len)
{
	struct answer a;
	json_error_t jerr;
	long status;

	*root = NULL;
	status = request("GET", path, NULL, &a, why, len);
	if (status >= 200 && status <= 299 && (*root = json_loadb(a.body,
	    a.len, 0, &jerr)) == NULL)
		snprintf(why, len, "%s: not JSON: %s", path, jerr.text);
	free(a.body);
	if (*root != NULL)
		return 0;
	if (status == -2 || status == 401 || status == 403)
		return KP_EXIT_NOPERM;
	return KP_EXIT_NOSOURCE;
}

static void
redfish_option(const char *name, const char *arg)
{
	if (name == NULL || bmc_option(name, arg))
		return;
	if (strcmp(name, "bmc-ca") == 0)
		ca_path = arg;
	else if (strcmp(name, "bmc-chassis") == 0)
		chassis_id = arg;
	else if (strcmp(name, "bmc-connect-timeout") == 0)
		connect_timeout_ms = kp_parse_duration_us(arg,
		    "connect timeout") / 1000;
	else
		insecure = 1;
}

/* HTTPS only, no redirects, verified unless --insecure, one connection. */
static void
setup_curl(void)
{
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0 ||
	    (curl = curl_easy_init()) == NULL)
		errx(KP_EXIT_FAILURE, "cannot start libcurl");
	curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "https");
	curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, connect_timeout_ms);
	curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, bmc_timeout_ms);
	curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, take_body);
	curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, take_header);
	curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, on_progress);
	if (ca_path != NULL)
		curl_easy_setopt(curl, CURLOPT_CAINFO, ca_path);
	if (insecure) {
		warnx("--insecure: the BMC's certificate and name are not "
		    "checked; anyone on the path may read its password");
		curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 0L);
	}
}

/*
 * A Redfish session where the service root names a SessionService and
 * the POST answers 201; else Basic authentication.
 */
static void
log_in(json_t *root)
{
	struct answer a;
	json_t *body;
	char *text, header[600], why[256];
	long status;

	if (json_object_get(root, "SessionService") != NULL) {
		body = json_pack("{s:s,s:s}", "UserName", bmc_user, "Password",
		    bmc_password);
		text = json_dumps(body, JSON_COMPACT);
		json_decref(body);
		status = request("POST", "/redfish/v1/SessionService/Sessions",
		    text, &a, why, sizeof(why));
		explicit_bzero(text, strlen(text));
		free(text);
		free(a.body);
		if (status == 201 && a.token[0] != '\0') {
			snprintf(header, sizeof(header), "X-Auth-Token: %s",
			    a.token);
			auth_headers = curl_slist_append(NULL, header);
			snprintf(session_uri, sizeof(session_uri), "%s",
			    a.location);
			curl_easy_setopt(curl, CURLOPT_HTTPHEADER,
			    auth_headers);
			return;
		}
	}
	curl_easy_setopt(curl, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
	curl_easy_setopt(curl, CURLOPT_USERNAME, bmc_user);
	curl_easy_setopt(curl, CURLOPT_PASSWORD, bmc_password);
}

/* The session deleted, at every exit: a BMC allows few. */
static void
log_out(void)
{
	struct answer a;
	const char *path = session_uri;
	char why[256];

	if (session_uri[0] == '\0')
		return;
	if (strncmp(path, "https://", 8) == 0 && (path = strchr(path + 8,
	    '/')) == NULL)
		path = session_uri;
	curl_easy_setopt(curl, CURLOPT_POSTFIELDS, NULL);
	(void)request("DELETE", path, NULL, &a, why, sizeof(why));
	free(a.body);
	session_uri[0] = '\0';
}

/* A Status whose State is there and not Enabled: skip the reading. */
static int
disabled(json_t *obj)
{
	json_t *status = json_object_get(obj, "Status"), *state;

	if (status == NULL)
		return 0;
	state = json_object_get(status, "State");
	return !json_is_string(state) ||
	    strcmp(json_string_value(state), "Enabled") != 0;
}

/* The watts of one place, in mW; -1 if it gives none. */
static int64_t
place_mw(json_t *res)
{
	json_t *v = NULL, *pc;

	if (res == NULL || disabled(res))
		return -1;
	if (resource == RES_ENVIRONMENT || resource == RES_SUPPLIES)
		v = json_object_get(json_object_get(res, resource ==
		    RES_ENVIRONMENT ? "PowerWatts" : "InputPowerWatts"),
		    "Reading");
	else if ((pc = json_array_get(json_object_get(res, "PowerControl"),
	    0)) != NULL && !disabled(pc))
		v = json_object_get(pc, "PowerConsumedWatts");
	return json_is_number(v) ? bmc_watts_mw(json_number_value(v)) : -1;
}

static const char *
link_of(json_t *obj, const char *key)
{
	return json_string_value(json_object_get(json_object_get(obj, key),
	    "@odata.id"));
}

/* The Metrics of every supply: RES_SUPPLIES when one gives a reading. */
static int
find_supplies(json_t *chassis)
{
	json_t *sub = NULL, *list = NULL, *bay, *met, *members;
	const char *p;
	size_t i;
	char why[256];

	nsupplies = 0;
	if ((p = link_of(chassis, "PowerSubsystem")) == NULL ||
	    get_json(p, &sub, why, sizeof(why)) != 0 ||
	    (p = link_of(sub, "PowerSupplies")) == NULL ||
	    get_json(p, &list, why, sizeof(why)) != 0)
		goto done;
	members = json_object_get(list, "Members");
	for (i = 0; i < json_array_size(members) && nsupplies < 16; i++) {
		if ((p = json_string_value(json_object_get(json_array_get(
		    members, i), "@odata.id"))) == NULL ||
		    get_json(p, &bay, why, sizeof(why)) != 0)
			continue;
		if ((p = link_of(bay, "Metrics")) != NULL && get_json(p, &met,
		    why, sizeof(why)) == 0) {
			if (place_mw(met) >= 0)
				snprintf(supply_paths[nsupplies++],
				    sizeof(supply_paths[0]), "%s", p);
			json_decref(met);
		}
		json_decref(bay);
	}
done:
	json_decref(sub);
	json_decref(list);
	return nsupplies > 0;
}

/* Whether the place linked as key gives a reading: then it is read. */
static int
try_place(json_t *chassis, const char *key)
{
	json_t *res;
	const char *p;
	char why[256];
	int64_t mw;

	if ((p = link_of(chassis, key)) == NULL ||
	    get_json(p, &res, why, sizeof(why)) != 0)
		return 0;
	mw = place_mw(res);
	json_decref(res);
	if (mw < 0)
		return 0;
	snprintf(read_path, sizeof(read_path), "%s", p);
	return 1;
}

/*
 * What is read, chosen once (rapl-read(1), The BMC sources): the first of
 * EnvironmentMetrics, Power and the supplies' input that gives a reading.
 */
static int
choose_resource(json_t *chassis)
{
	resource = RES_ENVIRONMENT;
	if (try_place(chassis, "EnvironmentMetrics"))
		return 1;
	resource = RES_POWER;
	if (try_place(chassis, "Power"))
		return 1;
	resource = RES_SUPPLIES;
	if (!find_supplies(chassis))
		return 0;
	snprintf(read_path, sizeof(read_path), "%s",
	    link_of(chassis, "PowerSubsystem"));
	return 1;
}

/* The Chassis: --bmc-chassis, else the collection's first member. */
static int
get_chassis(json_t **chassis, char *why, size_t len)
{
	json_t *list;
	const char *p;
	char path[512];
	int status;

	if (chassis_id != NULL) {
		snprintf(path, sizeof(path), "/redfish/v1/Chassis/%s",
		    chassis_id);
		return get_json(path, chassis, why, len);
	}
	if ((status = get_json("/redfish/v1/Chassis", &list, why, len)) != 0)
		return status;
	p = json_string_value(json_object_get(json_array_get(
	    json_object_get(list, "Members"), 0), "@odata.id"));
	snprintf(path, sizeof(path), "%s", p != NULL ? p : "");
	json_decref(list);
	if (p == NULL) {
		snprintf(why, len, "/redfish/v1/Chassis: no member");
		return KP_EXIT_NOSOURCE;
	}
	return get_json(path, chassis, why, len);
}

static int
fetch_one(const char *path, int64_t *mw, char *why, size_t len)
{
	json_t *res;

	if (get_json(path, &res, why, len) != 0)
		return 1;
	*mw = place_mw(res);
	json_decref(res);
	if (*mw < 0) {
		snprintf(why, len, "%s: no reading, or its Status is not "
		    "Enabled", path);
		return 1;
	}
	return 0;
}

/* The power now, from the resource chosen. */
static int
redfish_fetch(int64_t *mw, char *why, size_t len)
{
	int64_t one;
	size_t i;

	if (resource != RES_SUPPLIES)
		return fetch_one(read_path, mw, why, len);
	*mw = 0;
	for (i = 0; i < nsupplies; i++) {
		if (fetch_one(supply_paths[i], &one, why, len) != 0)
			return 1;
		*mw += one;
	}
	return 0;
}

static void redfish_close(void);

static const struct bmc_fetcher redfish_fetcher = { "redfish",
    redfish_fetch, redfish_close };

static int
redfish_open(struct meter *m, char *why, size_t len)
{
	struct member *mb;
	json_t *root = NULL, *chassis = NULL;
	int64_t mw;
	int status;

	if (bmc_target == NULL || bmc_user[0] == '\0')
		errx(KP_EXIT_USAGE, "source redfish wants --bmc and "
		    "--bmc-credentials");
	if (strncmp(bmc_target, "https://", 8) != 0)
		errx(KP_EXIT_USAGE, "--bmc must be an https:// URL for source "
		    "redfish: '%s'", bmc_target);
	setup_curl();
	if ((status = get_json("/redfish/v1/", &root, why, len)) != 0)
		return status;
	log_in(root);
	json_decref(root);
	if ((status = get_chassis(&chassis, why, len)) != 0)
		return status;
	if (!choose_resource(chassis)) {
		json_decref(chassis);
		snprintf(why, len, "%s: no power reading in the chassis",
		    bmc_target);
		return KP_EXIT_NOSOURCE;
	}
	json_decref(chassis);
	if (redfish_fetch(&mw, why, len) != 0)
		return KP_EXIT_NOSOURCE;
	bmc_set_fetcher(&redfish_fetcher);
	bmc_first_reading(mw);
	mb = new_member(m, &redfish_source, "redfish");
	mb->reading = READ_INTEGRAL_UJ;
	xpath(mb->zone, sizeof(mb->zone), "platform");
	xpath(mb->where, sizeof(mb->where), "%s", read_path);
	return 0;
}

static void
redfish_close(void)
{
	bmc_stop();
	if (curl != NULL) {
		log_out();
		curl_easy_cleanup(curl);
		curl_global_cleanup();
		curl = NULL;
	}
	curl_slist_free_all(auth_headers);
	auth_headers = NULL;
	bmc_forget();
}

static void
redfish_describe(char *buf, size_t len)
{
	snprintf(buf, len, "%s", bmc_target != NULL ? bmc_target : "no --bmc");
}

static const struct option redfish_options[] = {
	{ "bmc", required_argument, NULL, OPT_SOURCE_OWN },
	{ "bmc-ca", required_argument, NULL, OPT_SOURCE_OWN },
	{ "bmc-chassis", required_argument, NULL, OPT_SOURCE_OWN },
	{ "bmc-connect-timeout", required_argument, NULL, OPT_SOURCE_OWN },
	{ "bmc-credentials", required_argument, NULL, OPT_SOURCE_OWN },
	{ "bmc-period", required_argument, NULL, OPT_SOURCE_OWN },
	{ "bmc-timeout", required_argument, NULL, OPT_SOURCE_OWN },
	{ "insecure", no_argument, NULL, OPT_SOURCE_OWN },
	{ NULL, 0, NULL, 0 }
};

const struct source redfish_source = {
	.name = "redfish",
	.what = "a BMC's Redfish power",
	.options = redfish_options,
	.option = redfish_option,
	.open = redfish_open,
	.read = bmc_read,
	.fields = bmc_fields,
	.describe = redfish_describe,
	.close = redfish_close,
	.save = bmc_save,
	.load = bmc_load
};
