// Shim for libmicrohttpd 0.9.75: the variadic MHD_start_daemon is reached through MHD_OPTION_ARRAY,
// MHD_get_connection_info's variadic selector through small wrappers, and option items that carry a
// callback are built here so Swift never casts a function pointer to an integer.
#ifndef CMICROHTTPD_SHIM_H
#define CMICROHTTPD_SHIM_H

#include <stdarg.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <microhttpd.h>

/// Starts a daemon with every option passed as an MHD_OPTION_ARRAY terminated by MHD_OPTION_END.
static inline struct MHD_Daemon *cmhd_start_daemon(unsigned int flags, uint16_t port,
                                                   MHD_AcceptPolicyCallback apc, void *apc_cls,
                                                   MHD_AccessHandlerCallback dh, void *dh_cls,
                                                   struct MHD_OptionItem *options) {
    return MHD_start_daemon(flags, port, apc, apc_cls, dh, dh_cls,
                            MHD_OPTION_ARRAY, options, MHD_OPTION_END);
}

/// The listening port the daemon bound (useful with port 0).
static inline uint16_t cmhd_daemon_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info ? info->port : 0;
}

/// The number of connections the daemon holds open now.
static inline unsigned int cmhd_daemon_connections(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
    return info ? info->num_connections : 0;
}

/// The connection's socket descriptor, or -1.
static inline int cmhd_connection_fd(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info ? info->connect_fd : -1;
}

/// The pointer the application stored for this connection at MHD_CONNECTION_NOTIFY_STARTED.
static inline void *cmhd_connection_socket_context(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info ? info->socket_context : NULL;
}

/// The client's address, or NULL.
static inline const struct sockaddr *cmhd_connection_client_address(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    return info ? info->client_addr : NULL;
}

// Option items. Each carries one value or one callback with its closure.
static inline struct MHD_OptionItem cmhd_option_value(enum MHD_OPTION option, intptr_t value) {
    struct MHD_OptionItem item = {option, value, NULL};
    return item;
}
static inline struct MHD_OptionItem cmhd_option_pointer(enum MHD_OPTION option, void *pointer) {
    struct MHD_OptionItem item = {option, 0, pointer};
    return item;
}
static inline struct MHD_OptionItem cmhd_option_end(void) {
    struct MHD_OptionItem item = {MHD_OPTION_END, 0, NULL};
    return item;
}
static inline struct MHD_OptionItem cmhd_option_notify_completed(MHD_RequestCompletedCallback callback,
                                                                 void *cls) {
    struct MHD_OptionItem item = {MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)callback, cls};
    return item;
}
static inline struct MHD_OptionItem cmhd_option_notify_connection(MHD_NotifyConnectionCallback callback,
                                                                  void *cls) {
    struct MHD_OptionItem item = {MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)callback, cls};
    return item;
}
typedef void *(*cmhd_uri_log_callback)(void *cls, const char *uri, struct MHD_Connection *connection);
static inline struct MHD_OptionItem cmhd_option_uri_log(cmhd_uri_log_callback callback, void *cls) {
    struct MHD_OptionItem item = {MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)callback, cls};
    return item;
}
typedef size_t (*cmhd_unescape_callback)(void *cls, struct MHD_Connection *connection, char *uri);
static inline struct MHD_OptionItem cmhd_option_unescape(cmhd_unescape_callback callback, void *cls) {
    struct MHD_OptionItem item = {MHD_OPTION_UNESCAPE_CALLBACK, (intptr_t)callback, cls};
    return item;
}
static inline struct MHD_OptionItem cmhd_option_logger(MHD_LogCallback callback, void *cls) {
    struct MHD_OptionItem item = {MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)callback, cls};
    return item;
}

// Flags.
static inline unsigned int cmhd_use_epoll_internal_thread(void) { return MHD_USE_EPOLL_INTERNAL_THREAD; }
static inline unsigned int cmhd_use_error_log(void) { return MHD_USE_ERROR_LOG; }
static inline unsigned int cmhd_use_suspend_resume(void) { return MHD_ALLOW_SUSPEND_RESUME; }
static inline unsigned int cmhd_use_dual_stack(void) { return MHD_USE_DUAL_STACK; }
static inline unsigned int cmhd_use_turbo(void) { return MHD_USE_TURBO; }
static inline unsigned int cmhd_use_internal_polling_thread(void) { return MHD_USE_INTERNAL_POLLING_THREAD; }
static inline size_t cmhd_size_unknown(void) { return (size_t)MHD_SIZE_UNKNOWN; }
static inline uint64_t cmhd_size_unknown64(void) { return MHD_SIZE_UNKNOWN; }
static inline ssize_t cmhd_content_reader_end_of_stream(void) { return MHD_CONTENT_READER_END_OF_STREAM; }
static inline ssize_t cmhd_content_reader_end_with_error(void) { return MHD_CONTENT_READER_END_WITH_ERROR; }

#endif
