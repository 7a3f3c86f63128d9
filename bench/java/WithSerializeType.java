// WithSerializeType runs a RocketMQ Java program's main class with the
// remoting header serialization fixed to the one named first on its command
// line (JSON or ROCKETMQ). bench/compare.sh uses it to drive Spool with
// RocketMQ's benchmark producer in both serializations.
//
// The Java client reads the rocketmq.serialize.type property (or, when that
// is unset, the ROCKETMQ_SERIALIZE_TYPE environment variable) once, when its
// RemotingCommand class is initialized, and uses JSON when neither is set.
// RocketMQ's benchmark programs set the property to ROCKETMQ as the first
// statement of main, before anything loads RemotingCommand, so a -D option
// cannot change their serialization. Initializing RemotingCommand here with
// the property set as asked fixes the serialization before the program's
// main runs; the program's own setProperty then has no effect.
//
// Usage: java -cp CLASSPATH WithSerializeType JSON|ROCKETMQ MAIN-CLASS [ARGS...]
// It prints "header serialization: X" with the serialization in effect.

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.Arrays;

public final class WithSerializeType {
    private static final String COMMAND = "org.apache.rocketmq.remoting.protocol.RemotingCommand";

    private WithSerializeType() {
    }

    public static void main(String[] args) throws Throwable {
        if (args.length < 2) {
            System.err.println("usage: WithSerializeType JSON|ROCKETMQ MAIN-CLASS [ARGS...]");
            System.exit(2);
        }
        String wanted = args[0];
        System.setProperty("rocketmq.serialize.type", wanted);
        ClassLoader loader = WithSerializeType.class.getClassLoader();
        Class<?> command = Class.forName(COMMAND, true, loader);
        Object inEffect = command.getMethod("getSerializeTypeConfigInThisServer").invoke(null);
        System.out.println("header serialization: " + inEffect);
        if (!wanted.equals(String.valueOf(inEffect))) {
            System.err.println("asked for " + wanted + " headers, the client uses " + inEffect);
            System.exit(1);
        }
        Method main = Class.forName(args[1], true, loader).getMethod("main", String[].class);
        try {
            main.invoke(null, (Object) Arrays.copyOfRange(args, 2, args.length));
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }
}
