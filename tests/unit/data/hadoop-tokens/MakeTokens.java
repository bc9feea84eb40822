// How the test vectors beside it were made, with Hadoop 3.5's own classes:
//   javac -cp "$HADOOP_LIB/*" MakeTokens.java && java -cp "$HADOOP_LIB/*:." MakeTokens
// (the password is not a real one; nothing here is a credential of any cluster).
import org.apache.hadoop.hdfs.security.token.delegation.DelegationTokenIdentifier;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.security.Credentials;
import org.apache.hadoop.security.token.Token;
import java.io.*;

public class MakeTokens {
  public static void main(String[] a) throws Exception {
    DelegationTokenIdentifier id = new DelegationTokenIdentifier(
        new Text("alice"), new Text("yarn"), new Text(""));
    id.setIssueDate(1795000000000L);
    id.setMaxDate(1795604800000L);
    id.setSequenceNumber(300);
    id.setMasterKeyId(7);
    Token<DelegationTokenIdentifier> t = new Token<>(id.getBytes(), "not-a-real-password".getBytes(),
        DelegationTokenIdentifier.HDFS_DELEGATION_KIND, new Text("172.18.0.2:9000"));
    Credentials c = new Credentials();
    c.addToken(new Text("172.18.0.2:9000"), t);
    c.addSecretKey(new Text("a-secret"), new byte[]{1,2,3});
    try (DataOutputStream o = new DataOutputStream(new FileOutputStream("tokens-v1.bin"))) { c.writeTokenStorageToStream(o); }
    try (DataOutputStream o = new DataOutputStream(new FileOutputStream("tokens-v0.bin"))) { c.writeTokenStorageToStream(o, Credentials.SerializedFormat.WRITABLE); }
    try (PrintWriter w = new PrintWriter("url-string.txt")) { w.print(t.encodeToUrlString()); }
  }
}
