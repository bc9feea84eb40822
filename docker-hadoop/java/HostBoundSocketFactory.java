package yarnflow.testcluster;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.channels.SocketChannel;

import org.apache.hadoop.conf.Configurable;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.net.StandardSocketFactory;

/**
 * Hadoop's standard socket factory, except that every outgoing socket leaves from
 * {@code yarnflow.testcluster.bind-address}.
 *
 * <p>The native test cluster runs three DataNodes on one machine, each on its own
 * loopback address (127.0.0.2-4, beside a NodeManager). Linux sends every loopback
 * connection from 127.0.0.1, and the NameNode records a DataNode under the address
 * its registration came from, so without this the three would register as one host.
 * A real cluster needs nothing like it: there each host's connections leave from its
 * own address.
 */
public class HostBoundSocketFactory extends StandardSocketFactory implements Configurable {
  public static final String BIND_ADDRESS = "yarnflow.testcluster.bind-address";

  private Configuration conf;
  private InetAddress local;

  @Override
  public void setConf(Configuration conf) {
    this.conf = conf;
    String address = conf.get(BIND_ADDRESS);
    try {
      local = address == null ? null : InetAddress.getByName(address);
    } catch (IOException e) {
      throw new IllegalArgumentException(BIND_ADDRESS + " is not an address: " + address, e);
    }
  }

  @Override
  public Configuration getConf() {
    return conf;
  }

  @Override
  public Socket createSocket() throws IOException {
    // Hadoop's NetUtils.connect needs a socket with a channel, as the standard one has.
    Socket socket = SocketChannel.open().socket();
    if (local != null) {
      socket.bind(new InetSocketAddress(local, 0));
    }
    return socket;
  }

  @Override
  public boolean equals(Object other) {
    return other instanceof HostBoundSocketFactory
        && java.util.Objects.equals(local, ((HostBoundSocketFactory) other).local);
  }

  @Override
  public int hashCode() {
    return java.util.Objects.hashCode(local);
  }
}
