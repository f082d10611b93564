package testserver;

import java.io.IOException;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.configuration.connectors.BoltConnector;
import org.neo4j.configuration.connectors.BoltConnectorInternalSettings;
import org.neo4j.configuration.connectors.HttpConnector;
import org.neo4j.configuration.connectors.HttpsConnector;
import org.neo4j.configuration.helpers.PortBindException;
import org.neo4j.configuration.helpers.SocketAddress;
import org.neo4j.dbms.api.DatabaseManagementService;
import org.neo4j.dbms.api.DatabaseManagementServiceBuilder;
import org.neo4j.graphdb.GraphDatabaseService;
import org.neo4j.io.ByteUnit;

/**
 * Embedded Neo4j (Community) with only a Bolt listener on 127.0.0.1, for tests.
 *
 * <p>System properties:
 * <ul>
 *   <li>{@code neo4j.home} (required): DBMS home; data lives in {@code <home>/data}.
 *       Re-using the same home keeps the data.</li>
 *   <li>{@code neo4j.port}: Bolt port, {@code 0} (default) picks a free one.</li>
 *   <li>{@code neo4j.password}: password of user {@code neo4j}, at least 8 characters.</li>
 *   <li>{@code neo4j.pagecache.mb}: page cache size in MiB (default 128).</li>
 * </ul>
 *
 * <p>Stdout carries exactly one line, {@code NEO4J_BOLT_URI=bolt://127.0.0.1:<port>}, printed
 * once Bolt accepts connections. Everything else goes to stderr. SIGTERM/SIGINT shut the DBMS
 * down cleanly through a shutdown hook.
 */
public final class Neo4jTestServer {
    private static final String HOST = "127.0.0.1";
    private static final int PICK_ATTEMPTS = 5;

    private Neo4jTestServer() {}

    public static void main(String[] args) throws Exception {
        PrintStream log = System.err;
        String homeProp = System.getProperty("neo4j.home");
        if (homeProp == null || homeProp.isBlank()) {
            fail("system property neo4j.home is required");
        }
        Path home = Files.createDirectories(Path.of(homeProp).toAbsolutePath());
        int requestedPort = Integer.getInteger("neo4j.port", 0);
        String password = System.getProperty("neo4j.password", "");
        if (password.length() < 8) {
            fail("system property neo4j.password must have at least 8 characters");
        }
        long pageCacheMb = Long.getLong("neo4j.pagecache.mb", 128L);

        // With port 0 we pick a free port ourselves (rather than letting Bolt bind :0) so the
        // advertised address, used by neo4j:// routing, carries the real port. The port could be
        // taken between the probe and Neo4j's bind; retry with a fresh one in that case.
        DatabaseManagementService dbms = null;
        int port = requestedPort;
        for (int attempt = 1; dbms == null; attempt++) {
            port = requestedPort != 0 ? requestedPort : freePort();
            try {
                dbms = start(home, port, pageCacheMb);
            } catch (RuntimeException e) {
                if (requestedPort != 0 || attempt >= PICK_ATTEMPTS || !isPortBindFailure(e)) {
                    throw e;
                }
                log.println("neo4j-test-server: start on port " + port + " failed (" + e
                        + "), retrying with another port");
            }
        }

        final DatabaseManagementService started = dbms;
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            log.println("neo4j-test-server: shutting down");
            try {
                started.shutdown();
                log.println("neo4j-test-server: stopped");
            } catch (Throwable t) {
                log.println("neo4j-test-server: shutdown failed: " + t);
            }
        }, "neo4j-test-server-shutdown"));

        setPassword(dbms, password);

        // Touch the default database so a broken store fails here, not in the first test.
        GraphDatabaseService db = dbms.database(GraphDatabaseSettings.DEFAULT_DATABASE_NAME);
        db.executeTransactionally("RETURN 1");

        log.println("neo4j-test-server: ready, home=" + home + ", pid=" + ProcessHandle.current().pid());
        System.out.println("NEO4J_BOLT_URI=bolt://" + HOST + ":" + port);
        System.out.flush();

        Thread.currentThread().join(); // until SIGTERM/SIGINT runs the shutdown hook
    }

    private static DatabaseManagementService start(Path home, int port, long pageCacheMb) {
        SocketAddress bolt = new SocketAddress(HOST, port);
        return new DatabaseManagementServiceBuilder(home)
                .setConfig(BoltConnector.enabled, true)
                .setConfig(BoltConnector.listen_address, bolt)
                .setConfig(BoltConnector.advertised_address, bolt)
                .setConfig(BoltConnector.encryption_level, BoltConnector.EncryptionLevel.DISABLED)
                .setConfig(HttpConnector.enabled, false)
                .setConfig(HttpsConnector.enabled, false)
                .setConfig(GraphDatabaseSettings.auth_enabled, true)
                .setConfig(GraphDatabaseSettings.pagecache_memory, ByteUnit.mebiBytes(pageCacheMb))
                .setConfig(GraphDatabaseSettings.preallocate_logical_logs, false)
                // Bolt otherwise waits 2 x 5 s on shutdown even with no client connected.
                .setConfig(BoltConnectorInternalSettings.thread_pool_shutdown_wait_time, Duration.ofSeconds(1))
                .setConfig(BoltConnectorInternalSettings.connection_shutdown_wait_time, Duration.ofSeconds(1))
                .build();
    }

    /** The stock neo4j/neo4j user must change its password; make it the requested one. */
    private static void setPassword(DatabaseManagementService dbms, String password) {
        GraphDatabaseService system = dbms.database(GraphDatabaseSettings.SYSTEM_DATABASE_NAME);
        try {
            system.executeTransactionally(
                    "ALTER USER neo4j SET PASSWORD $pw CHANGE NOT REQUIRED", Map.of("pw", password));
        } catch (RuntimeException e) {
            // A restart on kept data: the password is already the requested one.
            if (!String.valueOf(e.getMessage()).contains("cannot be the same")) {
                throw e;
            }
        }
    }

    private static boolean isPortBindFailure(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof PortBindException) {
                return true;
            }
        }
        return false;
    }

    private static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getByName(HOST))) {
            socket.setReuseAddress(true);
            return socket.getLocalPort();
        }
    }

    private static void fail(String message) {
        System.err.println("neo4j-test-server: " + message);
        System.exit(2);
    }
}
